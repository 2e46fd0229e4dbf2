import uPlot from 'uplot';

/** One line of a chart. */
export interface Line {
  label: string;
  colour: string;
  dash: number[];
  width?: number;
  /** How a value reads in the legend. */
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
          {},
          ...lines.map((line) => ({
            label: line.label,
            stroke: line.colour,
            dash: line.dash,
            width: line.width ?? 2,
            points: { show: false },
            value: (_u: uPlot, v: number | null) => line.value(v),
          })),
        ],
        axes: [{ stroke: '#333' }, { stroke: '#333', label: unit, size: 60 }],
        // At least a minute of time across, so that a fresh page does not read in milliseconds.
        scales: {
          x: { time: true, range: (_u, min, max) => [Math.min(min, max - 60), max] },
          y: { range: (_u, min, max) => [0, Math.max(1, max ?? min)] },
        },
        legend: { live: true },
        cursor: { drag: { x: false, y: false } },
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

  private width(): number {
    return Math.max(260, this.container.clientWidth);
  }
}
