/** The model plus its outbound side: the webhook it signs delivery-status events for. */
import { AdsPlatformModel, type DeliveryStatus, type ModelOptions, type WebhookDelivery } from './model.ts'
import { postEvent, verifySubscription } from './webhook.ts'

export interface WebhookSettings {
  url: string | null
  verifyToken: string
  /** Send an event by itself when an upload changes an audience's delivery status. */
  auto: boolean
}

export class AdsPlatformState extends AdsPlatformModel {
  readonly webhook: WebhookSettings
  private readonly pending = new Set<Promise<unknown>>()

  constructor(opts: ModelOptions, webhook: WebhookSettings) {
    super(opts)
    this.webhook = { ...webhook }
  }

  setWebhook(url: string | null, verifyToken?: string): void {
    this.webhook.url = url
    if (verifyToken !== undefined) this.webhook.verifyToken = verifyToken
  }

  /**
   * POSTs a signed delivery-status event for the audience to the webhook URL (or `opts.url`).
   * `status` defaults to the audience's current one; `opts.appSecret` signs with another secret
   * (to test that a receiver refuses it). Resolves with the delivery, also kept in webhookLog.
   */
  sendDeliveryStatus(audienceId: string, status?: DeliveryStatus, opts: { url?: string; appSecret?: string } = {}): Promise<WebhookDelivery> {
    const url = opts.url ?? this.webhook.url
    if (!url) return Promise.reject(new Error('no webhook URL configured (option webhookUrl or PUT /_sim/webhook)'))
    const current = this.audience(audienceId)
    if (!current) return Promise.reject(new Error(`unknown audience ${audienceId}`))
    const p = postEvent(url, audienceId, status ?? current.delivery_status, { appSecret: opts.appSecret ?? this.opts.appSecret, now: this.opts.now() }).then((d) => {
      this.webhookLog.push(d)
      return d
    })
    this.track(p)
    return p
  }

  /** Performs the subscription handshake against the webhook URL. */
  verifyWebhookSubscription(): Promise<{ ok: boolean; status: number | null; challenge: string; answer: string | null }> {
    if (!this.webhook.url) return Promise.reject(new Error('no webhook URL configured'))
    return verifySubscription(this.webhook.url, this.webhook.verifyToken)
  }

  /** Called after an upload that changed the audience's status. */
  statusChanged(audienceId: string): void {
    if (this.webhook.auto && this.webhook.url) this.sendDeliveryStatus(audienceId).catch(() => undefined)
  }

  /** Waits for the webhook deliveries in flight. */
  async flushWebhooks(): Promise<void> {
    while (this.pending.size) await Promise.allSettled([...this.pending])
  }

  private track(p: Promise<unknown>): void {
    const done = p.then(
      () => undefined,
      () => undefined,
    )
    this.pending.add(done)
    void done.then(() => this.pending.delete(done))
  }
}
