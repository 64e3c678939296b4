/**
 * The sync-completion e-mail: when an integration lists `notification_emails`, each finished or
 * failed sync sends one plain-text message to them through the deployment's SMTP server
 * (`CDP_SMTP_URL`, e.g. `smtp://user:password@mail.example.com:587`; `CDP_SMTP_FROM` the sender),
 * with nodemailer. Up to three attempts; the outcome is recorded on the job beside the webhook's,
 * and a failure never fails the sync. The SMTP URL carries credentials: it is never logged or
 * recorded, only the host.
 */
import nodemailer from 'nodemailer'
import { withRetry } from '../../common/retry.ts'

type SmtpError = { responseCode?: number; code?: string }

export interface MailSettings {
  /** smtp:// or smtps:// URL of the deployment's SMTP server, with credentials if it needs them. */
  url: string
  /** The sender, e.g. `CDP <cdp@example.com>`. */
  from: string
}

export interface EmailNotification {
  status: 'delivered' | 'failed' | 'skipped'
  recipients: string[]
  attempts: number
  at: string
  /** The SMTP server's message id, when delivered. */
  message_id?: string
  error?: string
}

export interface SyncMailContent {
  event: 'sync.completed' | 'sync.failed'
  sync_id: string
  integration_id: number
  tenant_id: number
  integration_type: string
  status: string
  /** e.g. `12.3s`. */
  duration: string
  published: { customers: number; orders: number } | null
  error: { error: string; message: string; solution?: string } | null
}

/** Subject and body of the message (pure). */
export function syncMail(c: SyncMailContent): { subject: string; text: string } {
  const ok = c.event === 'sync.completed'
  const subject = `[CDP] ${c.integration_type} sync ${ok ? 'completed' : 'failed'}: integration ${c.integration_id}, tenant ${c.tenant_id}`
  const lines = [
    `The ${c.integration_type} sync ${c.sync_id} of integration ${c.integration_id} (tenant ${c.tenant_id}) ${ok ? 'completed' : 'failed'} after ${c.duration}.`,
    '',
    `Status: ${c.status}`,
  ]
  if (c.published) lines.push(`Published: ${c.published.customers} customer and ${c.published.orders} order events`)
  if (c.error) lines.push(`Error: ${c.error.error}: ${c.error.message}`, ...(c.error.solution ? [`What to do: ${c.error.solution}`] : []))
  lines.push('', `Details: GET /api/v2/tenant-integrations/integration/${c.integration_id}`)
  return { subject, text: lines.join('\n') }
}

export interface EmailOptions {
  sleep?: (ms: number) => Promise<void>
  now?: () => number
  attempts?: number
}

export async function notifyEmail(mail: MailSettings | null, recipients: readonly string[], content: SyncMailContent, opts: EmailOptions = {}): Promise<EmailNotification> {
  const now = opts.now ?? Date.now
  const at = () => new Date(now()).toISOString()
  const to = [...recipients]
  if (!to.length) return { status: 'skipped', recipients: to, attempts: 0, at: at() }
  if (!mail) return { status: 'skipped', recipients: to, attempts: 0, at: at(), error: 'no SMTP server configured (CDP_SMTP_URL)' }
  let transport: ReturnType<typeof nodemailer.createTransport>
  try {
    const url = new URL(mail.url)
    transport = nodemailer.createTransport({
      host: url.hostname,
      port: url.port ? Number(url.port) : url.protocol === 'smtps:' ? 465 : 587,
      secure: url.protocol === 'smtps:',
      auth: url.username ? { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } : undefined,
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 20_000,
    })
  } catch {
    // A malformed URL (say a % in the password not written %25): never a reason to fail the sync.
    return { status: 'failed', recipients: to, attempts: 0, at: at(), error: 'CDP_SMTP_URL cannot be read (percent-encode special characters of the user and password)' }
  }
  const { subject, text } = syncMail(content)
  let tried = 0
  try {
    const info = await withRetry(
      (attempt) => {
        tried = attempt
        return transport.sendMail({ from: mail.from, to, subject, text, headers: { 'X-CDP-Event': content.event, 'X-CDP-Sync-Id': content.sync_id } })
      },
      // 1 s, then 2 s between attempts.
      { maxAttempts: opts.attempts ?? 3, initialDelayMs: 1000, maxDelayMs: 2000 },
      // A permanent refusal (5xx: bad recipient, authentication) does not get better by retrying.
      { classify: (err) => !(((err as SmtpError).responseCode ?? 0) >= 500), exhausted: 'last', sleep: opts.sleep },
    )
    return { status: 'delivered', recipients: to, attempts: tried, at: at(), message_id: info.messageId }
  } catch (err) {
    const e = err as SmtpError
    // The server's reply, never the URL (it carries the credentials).
    return { status: 'failed', recipients: to, attempts: tried, at: at(), error: e.responseCode ? `SMTP ${e.responseCode}` : (e.code ?? 'no answer') }
  } finally {
    transport.close()
  }
}
