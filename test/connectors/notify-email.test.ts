/**
 * Sync e-mails through a real SMTP server (smtp-server, in this process): what arrives, to whom,
 * with authentication; a refused recipient, an unreachable server and no configuration.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { notifyEmail, syncMail, type SyncMailContent } from '../../pipelines/connectors/notify-email.ts'
import { mailBody, startSmtpServer, type ReceivedMail } from '../smtp.ts'

let smtp: Awaited<ReturnType<typeof startSmtpServer>>
let received: ReceivedMail[]
let port = 0

const content: SyncMailContent = {
  event: 'sync.completed',
  sync_id: 'sync_abc',
  integration_id: 7,
  tenant_id: 3,
  integration_type: 'commerce_platform',
  status: 'success',
  duration: '12.4s',
  published: { customers: 40, orders: 120 },
  error: null,
}

beforeAll(async () => {
  smtp = await startSmtpServer()
  received = smtp.received
  port = smtp.port
})

afterAll(async () => {
  await smtp.close()
})

const noWait = { sleep: async () => undefined }

describe('sync e-mails', () => {
  it('delivers one message to every recipient, authenticated, with the outcome in subject, headers and body', async () => {
    const before = received.length
    const n = await notifyEmail({ url: `smtp://cdp:s3cret-pass@127.0.0.1:${port}`, from: 'CDP <cdp@shop.example>' }, ['ana@shop.example', 'ops@shop.example'], content, noWait)
    expect(n).toMatchObject({ status: 'delivered', recipients: ['ana@shop.example', 'ops@shop.example'], attempts: 1, message_id: expect.any(String) })
    expect(received.length).toBe(before + 1)
    const m = received.at(-1)!
    expect(m.from).toBe('cdp@shop.example')
    expect(m.to).toEqual(['ana@shop.example', 'ops@shop.example'])
    expect(m.user).toBe('cdp')
    expect(m.raw).toMatch(/^Subject: \[CDP\] commerce_platform sync completed: integration 7, tenant 3\r?$/m)
    expect(m.raw).toMatch(/^X-CDP-Event: sync\.completed\r?$/im) // header names are case-insensitive
    expect(m.raw).toMatch(/^X-CDP-Sync-Id: sync_abc\r?$/im)
    expect(mailBody(m.raw)).toContain('The commerce_platform sync sync_abc of integration 7 (tenant 3) completed after 12.4s.')
    expect(mailBody(m.raw)).toContain('Published: 40 customer and 120 order events')
    expect(m.raw).not.toContain('s3cret-pass')
  })

  it('a failed sync says what failed and what to do', () => {
    const { subject, text } = syncMail({ ...content, event: 'sync.failed', status: 'failed', published: null, error: { error: 'INVALID_CREDENTIALS', message: 'the platform refused the key', solution: 'update the credentials' } })
    expect(subject).toBe('[CDP] commerce_platform sync failed: integration 7, tenant 3')
    expect(text).toContain('Error: INVALID_CREDENTIALS: the platform refused the key')
    expect(text).toContain('What to do: update the credentials')
  })

  it('a refused recipient fails at once (a permanent SMTP error), wrong credentials too; neither error shows the password', async () => {
    const refused = await notifyEmail({ url: `smtp://cdp:s3cret-pass@127.0.0.1:${port}`, from: 'cdp@shop.example' }, ['nobody@refused.example'], content, noWait)
    expect(refused).toMatchObject({ status: 'failed', attempts: 1, error: 'SMTP 550' })
    const badAuth = await notifyEmail({ url: `smtp://cdp:wrong-pass@127.0.0.1:${port}`, from: 'cdp@shop.example' }, ['ana@shop.example'], content, noWait)
    expect(badAuth.status).toBe('failed')
    expect(badAuth.attempts).toBe(1)
    expect(JSON.stringify([refused, badAuth])).not.toMatch(/pass/)
  })

  it('an unreachable server is tried three times; no SMTP configured or no recipients: skipped', async () => {
    const waits: number[] = []
    const down = await notifyEmail({ url: 'smtp://127.0.0.1:1', from: 'cdp@shop.example' }, ['ana@shop.example'], content, { sleep: async (ms) => void waits.push(ms) })
    expect(down).toMatchObject({ status: 'failed', attempts: 3 })
    expect(waits).toEqual([1000, 2000])
    expect(await notifyEmail(null, ['ana@shop.example'], content)).toMatchObject({ status: 'skipped', error: 'no SMTP server configured (CDP_SMTP_URL)' })
    // A % in the password not written %25: a failed e-mail (never a thrown error that would fail the sync), no password in it.
    const malformed = await notifyEmail({ url: 'smtp://cdp:p%zz@127.0.0.1:25', from: 'cdp@shop.example' }, ['ana@shop.example'], content, noWait)
    expect(malformed).toMatchObject({ status: 'failed', attempts: 0 })
    expect(JSON.stringify(malformed)).not.toContain('p%zz')
    expect(await notifyEmail({ url: `smtp://127.0.0.1:${port}`, from: 'cdp@shop.example' }, [], content)).toMatchObject({ status: 'skipped', recipients: [], attempts: 0 })
  })
})
