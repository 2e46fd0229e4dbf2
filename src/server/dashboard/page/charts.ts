import uPlot from 'uplot';
import { clock } from './format.js';

/** Pixels between two time labels at least: a label (`13:56:43`) and a gap wider than it. */
const TIME_LABEL_SPACE = 90;

/** One line of a chart. */
export interface Line {
  label: string;
  colour: string;
  dash: number[];
  width?: number;
  /** How a value reads in the legend (the last point's when the pointer is not on the chart). */
  value(v: number | null): string;
}

/** A time chart of a few lines that follows its container's width. */
export class TimeChart {
  private readonly plot: uPlot;

  constructor(
    private readonly container: HTMLElement,
    lines: Line[],
    unit: string,
  ) {
    this.plot = new uPlot(
      {
        width: this.width(),
        height: 220,
        series: [
          { value: (u: uPlot, v: number | null, _s: number, i: number | null) => timeOf(lastOr(u, 0, v, i)) },
          ...lines.map((line, n) => ({
            label: line.label,
            stroke: line.colour,
            dash: line.dash,
            width: line.width ?? 2,
            points: { show: false },
            value: (u: uPlot, v: number | null, _s: number, i: number | null) =>
              line.value(lastOr(u, n + 1, v, i)),
          })),
        ],
        axes: [
          // One line of 24-hour time per label, far enough apart that no two labels touch.
          {
            stroke: '#333',
            space: TIME_LABEL_SPACE,
            values: (_u: uPlot, splits: number[]) => splits.map((s) => timeOf(s)),
          },
          { stroke: '#333', label: unit, size: 60 },
        ],
        // At least a minute of time across, so that a fresh page does not read in milliseconds.
        scales: {
          x: { time: true, range: (_u, min, max) => [Math.min(min, max - 60), max] },
          y: { range: (_u, min, max) => [0, Math.max(1, max ?? min)] },
        },
        legend: { live: true },
        cursor: { drag: { x: false, y: false } },
        hooks: { draw: [(u) => this.recordLabels(u)] },
      },
      [[], ...lines.map(() => [])],
      container,
    );
    new ResizeObserver(() => this.plot.setSize({ width: this.width(), height: 220 })).observe(container);
  }

  /** Times (Unix ms) and one array of values per line. */
  update(times: number[], values: (number | null)[][]): void {
    this.plot.setData([times.map((t) => t / 1000), ...values] as uPlot.AlignedData);
  }

  /**
   * Where the time labels were drawn, as `data-time-labels` (left and width in px, each): the
   * axis is drawn on a canvas, so this is how a reader of the page (the browser test) can see
   * that no two labels overlap.
   */
  private recordLabels(u: uPlot): void {
    const axis = u.axes[0] as uPlot.Axis & { _splits?: number[]; _values?: string[] };
    const context = u.ctx;
    context.save();
    // uPlot keeps an axis's font as [the font at the canvas's pixel ratio, its size, its CSS size].
    context.font = (axis.font as unknown as [string])[0];
    const boxes = (axis._splits ?? []).map((split, i) => {
      const width = context.measureText(axis._values?.[i] ?? '').width / devicePixelRatio;
      return [Math.round(u.valToPos(split, 'x') - width / 2), Math.round(width)];
    });
    context.restore();
    this.container.dataset.timeLabels = JSON.stringify(boxes);
  }

  private width(): number {
    return Math.max(260, this.container.clientWidth);
  }
}

/** The legend's value: the one under the pointer, or the line's last one when there is none. */
function lastOr(u: uPlot, series: number, v: number | null, idx: number | null): number | null {
  if (idx !== null && idx !== undefined) return v;
  const values = u.data[series] as (number | null)[] | undefined;
  return values === undefined || values.length === 0 ? null : (values[values.length - 1] ?? null);
}

function timeOf(seconds: number | null): string {
  return seconds === null ? '–' : clock(seconds * 1000);
}
