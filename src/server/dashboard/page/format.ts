const integer = new Intl.NumberFormat('en', { maximumFractionDigits: 0 });
const oneDecimal = new Intl.NumberFormat('en', { minimumFractionDigits: 1, maximumFractionDigits: 1 });

export const count = (n: number | undefined): string => integer.format(n ?? 0);
export const perSecond = (n: number | undefined): string => `${oneDecimal.format(n ?? 0)}/s`;
export const percent = (r: number | null): string => (r === null ? '–' : `${oneDecimal.format(r * 100)} %`);
export const millis = (ms: number | null): string =>
  ms === null ? '–' : ms < 1 ? `${(ms * 1000).toFixed(0)} µs` : `${oneDecimal.format(ms)} ms`;
export const clock = (at: number): string => new Date(at).toLocaleTimeString('en-GB', { hour12: false });
export const retry = (ms: number | null): string => {
  if (ms === null) return 'never';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${oneDecimal.format(ms / 1000)} s`;
  return ms < 3_600_000 ? `${integer.format(ms / 60_000)} min` : `${oneDecimal.format(ms / 3_600_000)} h`;
};
