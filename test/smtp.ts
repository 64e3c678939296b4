/**
 * A real SMTP server (smtp-server) in the test process: it accepts every message (recipients
 * `@refused.example` get a 550), authenticates `cdp` / `s3cret-pass` when a client logs in, and
 * keeps what arrived.
 */
import { SMTPServer } from 'smtp-server'
import type { AddressInfo } from 'node:net'

export interface ReceivedMail {
  from: string
  to: string[]
  user: string | undefined
  raw: string
}

export const SMTP_USER = 'cdp'
export const SMTP_PASSWORD = 's3cret-pass'

export async function startSmtpServer(): Promise<{ port: number; url: string; received: ReceivedMail[]; close(): Promise<void> }> {
  const received: ReceivedMail[] = []
  const server = new SMTPServer({
    secure: false,
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    authOptional: true,
    logger: false,
    onAuth(auth, _session, cb) {
      if (auth.username === SMTP_USER && auth.password === SMTP_PASSWORD) return cb(null, { user: auth.username })
      cb(new Error('Invalid username or password'))
    },
    onRcptTo(address, _session, cb) {
      if (!address.address.endsWith('@refused.example')) return cb()
      const err = new Error('mailbox unavailable') as Error & { responseCode: number }
      err.responseCode = 550
      cb(err)
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        received.push({ from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '', to: session.envelope.rcptTo.map((r) => r.address), user: session.user as string | undefined, raw: Buffer.concat(chunks).toString('utf8') })
        cb()
      })
    },
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  const port = (server.server.address() as AddressInfo).port
  return { port, url: `smtp://${SMTP_USER}:${SMTP_PASSWORD}@127.0.0.1:${port}`, received, close: () => new Promise<void>((r) => server.close(() => r())) }
}

/** A message's body, quoted-printable decoded (soft line breaks joined, =XX bytes). */
export function mailBody(raw: string): string {
  const body = raw.slice(raw.search(/\r?\n\r?\n/)).trim()
  return Buffer.from(body.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16))), 'latin1').toString('utf8')
}
