// report/: self-contained HTML reports — pure functions from numbers to strings (inline SVG charts,
// inline CSS, nothing fetched). The caller writes the file.
export { type BarChartOptions, type BarGroup, type BarValue, barChart } from './bars.ts';
export {
  contrastText,
  DIVERGING_NEUTRAL,
  diverging,
  OKABE_ITO,
  RDBU,
  relativeLuminance,
  sequential,
  seriesColor,
  VIRIDIS,
} from './color.ts';
export { type Finding, findingsTable } from './findings.ts';
export { type HeatmapOptions, heatmap, type PassKTGrid, passKTHeatmap } from './heatmap.ts';
export {
  type BadgeKind,
  badge,
  escapeAttr,
  escapeText,
  figure,
  formatNumber,
  grid,
  jsonDetails,
  keyValues,
  list,
  NA,
  type NumberFormat,
  type PageOptions,
  page,
  paragraph,
  type SummaryValue,
  section,
  slug,
  verdict,
} from './html.ts';
export { type LineChartOptions, type LinePoint, type LineSeries, lineChart } from './line.ts';
export {
  MAX_TASK_ROWS,
  type MetricsRow,
  type TaskRow,
  type TrainingReportData,
  type TrajectoriesReportData,
  trainingReport,
  trajectoriesReport,
} from './runs.ts';
export { axisTicks, logTicks, niceTicks, type Ticks } from './scale.ts';
export { type StackedBarOptions, type StackedSegment, stackedBarChart } from './stacked.ts';
export { SVG_NS, truncate } from './svg.ts';
export { type Cell, type CellSpec, type Column, type TableOptions, table } from './table.ts';
export {
  type BoardCell,
  board,
  type CreditColumn,
  codeBlock,
  jsonBlock,
  type TrajectoryPageOptions,
  type TurnView,
  textBlock,
  tokenStrip,
  toolCall,
  toolResult,
  trajectoryPage,
} from './trajectory.ts';
