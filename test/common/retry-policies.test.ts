/**
 * common/retry.ts with the policies of its callers other than the importer (import-retry.test.ts):
 * the ads platform client's (attempt count, tenacity's waits, the last failure itself) and the
 * connectors' HTTP client's (0.5 s doubling, a short Retry-After waited out, a long one thrown).
 */
import { describe, expect, it } from 'vitest'
import { RetriesExhaustedError, withRetry } from '../../common/retry.ts'
import { parseRetryAfter, retryAfterSeconds } from '../../common/rate-limit.ts'
import { ConnectorError, requestJson } from '../../pipelines/connectors/sources/http.ts'

const failing = (errors: unknown[]) => {
  let i = 0
  return async () => {
    if (i < errors.length) throw errors[i++]
    return 'ok'
  }
}

describe('withRetry: attempts, minimum wait, waits a failure names, the last failure', () => {
  it('stops after maxAttempts and throws the last failure itself with exhausted: last', async () => {
    const sleeps: number[] = []
    const policy = { maxAttempts: 3, initialDelayMs: 1000, minDelayMs: 4000, maxDelayMs: 10_000 }
    const last = new Error('third')
    const err = await withRetry(failing([new Error('1'), new Error('2'), last, new Error('4')]), policy, {
      classify: () => true,
      exhausted: 'last',
      sleep: async (ms) => void sleeps.push(ms),
    }).catch((e: unknown) => e)
    expect(err).toBe(last)
    expect(sleeps).toEqual([4000, 4000])
    const wrapped = await withRetry(failing([new Error('a'), new Error('b')]), { ...policy, maxAttempts: 2 }, { classify: () => true, sleep: async () => {} }).catch((e: unknown) => e)
    expect(wrapped).toBeInstanceOf(RetriesExhaustedError)
    expect(wrapped).toMatchObject({ attempts: 2 })
  })

  it('waits what a failure names ({ afterMs }) instead of the backoff; false fails at once', async () => {
    const sleeps: number[] = []
    const seen: number[] = []
    const v = await withRetry(failing([{ wait: 2500 }, { wait: 0 }, 'backoff']), { maxAttempts: 5, initialDelayMs: 100, maxDelayMs: 1000 }, {
      classify: (e) => (typeof e === 'object' && e !== null && 'wait' in e ? { afterMs: (e as { wait: number }).wait } : true),
      sleep: async (ms) => void sleeps.push(ms),
      onRetry: (i) => seen.push(i.attempt),
    })
    expect(v).toBe('ok')
    expect(sleeps).toEqual([2500, 0, 400])
    expect(seen).toEqual([1, 2, 3])
    let calls = 0
    const fatal = new Error('fatal')
    await expect(withRetry(async () => { calls++; throw fatal }, { maxAttempts: 5, initialDelayMs: 1, maxDelayMs: 1 }, { classify: () => false })).rejects.toBe(fatal)
    expect(calls).toBe(1)
  })
})

describe('Retry-After both ways', () => {
  it('reads seconds and HTTP dates, writes whole seconds of at least 1', () => {
    expect(parseRetryAfter('7')).toBe(7)
    expect(parseRetryAfter('1.2')).toBe(2)
    expect(parseRetryAfter(new Date(Date.UTC(2025, 0, 1, 0, 0, 30)).toUTCString(), Date.UTC(2025, 0, 1))).toBe(30)
    expect(parseRetryAfter('soon')).toBeNull()
    expect(parseRetryAfter(null)).toBeNull()
    expect([0, 1, 999, 1000, 1001, 40_000].map(retryAfterSeconds)).toEqual([1, 1, 1, 1, 2, 40])
  })
})

/** A fetch that answers from a script: a status (and Retry-After), or a thrown network error. */
function scripted(answers: (number | [number, string] | 'down')[]) {
  const calls: number[] = []
  const fetch = (async () => {
    const a = answers[Math.min(calls.length, answers.length - 1)]!
    calls.push(calls.length + 1)
    if (a === 'down') throw new TypeError('fetch failed')
    const [status, retryAfter] = Array.isArray(a) ? a : [a, undefined]
    return new Response(status === 200 ? '{"ok":true}' : '{}', { status, headers: retryAfter ? { 'retry-after': retryAfter } : {} })
  }) as typeof globalThis.fetch
  return { fetch, calls }
}

describe('connectors HTTP client: its retry policy on common/retry.ts', () => {
  const req = { url: 'http://platform.test/x', what: 'orders page 1' }

  it('retries 5xx and network errors with 0.5 s, 1 s, up to 3 attempts, then UNAVAILABLE', async () => {
    const sleeps: number[] = []
    const ok = scripted([503, 'down', 200])
    await expect(requestJson(req, { fetch: ok.fetch, sleep: async (ms) => void sleeps.push(ms) })).resolves.toEqual({ ok: true })
    expect(sleeps).toEqual([500, 1000])
    const down = scripted([500, 502, 503, 200])
    const err = await requestJson(req, { fetch: down.fetch, sleep: async () => {} }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ConnectorError)
    expect(err).toMatchObject({ code: 'UNAVAILABLE', status: 503, message: 'orders page 1: HTTP 503' })
    expect(down.calls).toHaveLength(3)
  })

  it('waits out a short Retry-After, throws a long one (and a short one on the last attempt) as RATE_LIMIT_EXCEEDED', async () => {
    const sleeps: number[] = []
    const short = scripted([[429, '2'], 200])
    await expect(requestJson(req, { fetch: short.fetch, sleep: async (ms) => void sleeps.push(ms) })).resolves.toEqual({ ok: true })
    expect(sleeps).toEqual([2000])
    const long = scripted([[429, '60'], 200])
    expect(await requestJson(req, { fetch: long.fetch, sleep: async () => {} }).catch((e: unknown) => e)).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', retryAfterSec: 60 })
    expect(long.calls).toHaveLength(1)
    const always = scripted([[429, '1']])
    expect(await requestJson(req, { fetch: always.fetch, sleep: async () => {} }).catch((e: unknown) => e)).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', retryAfterSec: 1 })
    expect(always.calls).toHaveLength(3)
    const noHeader = scripted([429])
    expect(await requestJson(req, { fetch: noHeader.fetch }).catch((e: unknown) => e)).toMatchObject({ retryAfterSec: 60 })
  })

  it('does not retry other client errors', async () => {
    for (const [status, code] of [[401, 'INVALID_CREDENTIALS'], [403, 'FORBIDDEN'], [404, 'NOT_FOUND'], [400, 'BAD_RESPONSE']] as const) {
      const s = scripted([status, 200])
      expect(await requestJson(req, { fetch: s.fetch }).catch((e: unknown) => e)).toMatchObject({ code, status })
      expect(s.calls).toHaveLength(1)
    }
  })
})
