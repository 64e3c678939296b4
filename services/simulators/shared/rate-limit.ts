/** A sliding-window request counter per caller: `take` says how long to wait (0: go ahead). */
export class SlidingWindow {
  private readonly calls = new Map<string, number[]>()
  constructor(public limit: number, public windowMs: number) {}

  take(key: string, now: number): number {
    const list = (this.calls.get(key) ?? []).filter((t) => t > now - this.windowMs)
    if (list.length >= this.limit) {
      this.calls.set(key, list)
      return list[0]! + this.windowMs - now
    }
    list.push(now)
    this.calls.set(key, list)
    return 0
  }

  reset(): void {
    this.calls.clear()
  }
}
