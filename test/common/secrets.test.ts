import { describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { createDecipheriv } from 'node:crypto'
import { parseKeyring, resolveSecretBox, secretsKeyFile, SecretDecryptError } from '../../common/secrets.ts'
import { ConfigError } from '../../common/config.ts'
import { silentLogger, testConfig, tmpDir } from '../helpers.ts'

const K1 = 'a'.repeat(64)
const K2 = '0123456789abcdef'.repeat(4)

describe('secrets at rest (AES-256-GCM)', () => {
  it('round-trips, with a fresh 16-byte IV per record and the tag and ciphertext in hex', () => {
    const box = parseKeyring(`k1:${K1}`)
    const a = box.encrypt('EAAB-secret-token')
    const b = box.encrypt('EAAB-secret-token')
    expect(a).toMatchObject({ key_id: 'k1', iv: expect.stringMatching(/^[0-9a-f]{32}$/), tag: expect.stringMatching(/^[0-9a-f]{32}$/), ciphertext: expect.stringMatching(/^[0-9a-f]+$/) })
    expect(a.iv).not.toBe(b.iv)
    expect(a.ciphertext).not.toBe(b.ciphertext)
    expect(JSON.stringify(a)).not.toContain('secret')
    expect(box.decrypt(a)).toBe('EAAB-secret-token')
    // Independent check: plain node:crypto AES-256-GCM with the same key, IV and tag.
    const d = createDecipheriv('aes-256-gcm', Buffer.from(K1, 'hex'), Buffer.from(a.iv, 'hex'))
    d.setAuthTag(Buffer.from(a.tag, 'hex'))
    expect(Buffer.concat([d.update(Buffer.from(a.ciphertext, 'hex')), d.final()]).toString()).toBe('EAAB-secret-token')
  })

  it('refuses a tampered record or an unknown key', () => {
    const box = parseKeyring(`k1:${K1}`)
    const e = box.encrypt('x')
    const flipped = { ...e, ciphertext: (parseInt(e.ciphertext.slice(0, 2), 16) ^ 1).toString(16).padStart(2, '0') + e.ciphertext.slice(2) }
    expect(() => box.decrypt(flipped)).toThrow(SecretDecryptError)
    expect(() => box.decrypt({ ...e, key_id: 'k9' })).toThrow(/no key k9/)
    // A truncated tag (Node would accept 4 bytes without authTagLength) or IV is refused.
    expect(() => box.decrypt({ ...e, tag: e.tag.slice(0, 8) })).toThrow(SecretDecryptError)
    expect(() => box.decrypt({ ...e, iv: e.iv.slice(0, 24) })).toThrow(SecretDecryptError)
  })

  it('a context (additional authenticated data) binds a record to its row', () => {
    const box = parseKeyring(`k1:${K1}`)
    const e = box.encrypt('token-of-row-7', 'integrations:7:3:credentials')
    expect(box.decrypt(e, 'integrations:7:3:credentials')).toBe('token-of-row-7')
    expect(() => box.decrypt(e, 'integrations:8:3:credentials')).toThrow(SecretDecryptError)
    expect(() => box.decrypt(e)).toThrow(SecretDecryptError)
    const ring = parseKeyring(`k2:${K2},k1:${K1}`)
    const moved = ring.reencrypt(e, 'integrations:7:3:credentials')
    expect(moved.key_id).toBe('k2')
    expect(ring.decrypt(moved, 'integrations:7:3:credentials')).toBe('token-of-row-7')
  })

  it('rotation: a new current key reads old records and re-encrypts them under itself', () => {
    const old = parseKeyring(`k1:${K1}`).encrypt('token-1')
    const ring = parseKeyring(`k2:${K2},k1:${K1}`)
    expect(ring.current).toBe('k2')
    expect(ring.decrypt(old)).toBe('token-1')
    const moved = ring.reencrypt(old)
    expect(moved.key_id).toBe('k2')
    expect(parseKeyring(`k2:${K2}`).decrypt(moved)).toBe('token-1')
    expect(ring.reencrypt(moved)).toBe(moved)
  })

  it('rejects a malformed keyring with the env variable named', () => {
    for (const bad of ['', 'k1', `k1:${K1.slice(1)}`, `k 1:${K1}`, `k1:${'z'.repeat(64)}`]) {
      expect(() => parseKeyring(bad), bad).toThrow(ConfigError)
    }
    expect(() => parseKeyring('k1:abc')).toThrow(/CDP_SECRETS_KEYS/)
  })

  it('production refuses to start without keys; development creates one key file (0600) and reuses it', () => {
    const dir = tmpDir()
    expect(() => resolveSecretBox({ ...testConfig('embedded', { dataDir: dir }), nodeEnv: 'production' }, silentLogger)).toThrow(/CDP_SECRETS_KEYS/)
    const dev = { ...testConfig('embedded', { dataDir: dir }), nodeEnv: 'development' as const }
    const a = resolveSecretBox(dev, silentLogger)
    const file = secretsKeyFile(dev)
    expect(fs.statSync(file).mode & 0o777).toBe(0o600)
    const b = resolveSecretBox(dev, silentLogger)
    expect(b.decrypt(a.encrypt('same key'))).toBe('same key')
    expect(path.dirname(file)).toBe(path.resolve(dir))
  })
})
