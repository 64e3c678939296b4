import { useEffect, useRef } from 'preact/hooks'
import * as Plot from '@observablehq/plot'

/**
 * An Observable Plot chart (SVG): `make` builds the plot's options for a width; the chart redraws
 * when its data or the container's width changes. `label` names it for screen readers, and a
 * table nearby carries the same numbers.
 */
export function Chart({ label, make, height = 260, deps }: { label: string; make: (width: number) => Plot.PlotOptions; height?: number; deps: unknown[] }) {
  const ref = useRef<HTMLDivElement>(null)
  useEffect(() => {
    const el = ref.current
    if (!el) return
    const draw = () => {
      const width = Math.max(280, Math.floor(el.clientWidth))
      const plot = Plot.plot({ width, height, marginLeft: 64, ariaLabel: label, style: { fontSize: '12px', background: 'transparent' }, ...make(width) })
      // The wrapper is the image for assistive technology (role img, the label); Plot's own
      // aria-labels sit on plain <g> groups, where ARIA does not allow them.
      plot.setAttribute('aria-hidden', 'true')
      el.replaceChildren(plot)
    }
    draw()
    const ro = new ResizeObserver(() => draw())
    ro.observe(el)
    return () => ro.disconnect()
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps)
  return <div class="chart" ref={ref} role="img" aria-label={label} data-chart={label} />
}

export { Plot }
