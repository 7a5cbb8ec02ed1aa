/** @jsxImportSource hono/jsx */

/** A line chart as server-rendered SVG (no script, no library): one line per series over the days. */

export interface Series {
	label: string;
	color: string;
	values: number[];
}

const W = 800;
const H = 260;
const PAD = { left: 44, right: 12, top: 12, bottom: 28 };

/** A round axis maximum at or above `max` (1, 2, 5 x 10^n). */
export function niceMax(max: number): number {
	if (max <= 0) return 1;
	const power = 10 ** Math.floor(Math.log10(max));
	for (const step of [1, 2, 5, 10]) if (step * power >= max) return step * power;
	return 10 * power;
}

/**
 * The axis of counts up to `max`: whole-number ticks at a round step (1, 2, 5
 * x 10^n), about four of them, the top one at or above `max`; so a range
 * whose busiest day had 1 event reads 0 and 1, not 0, 0.25, 0.5.
 */
export function axis(max: number): { top: number; ticks: number[] } {
	const step = Math.max(1, niceMax(max / 4));
	const top = Math.max(step, Math.ceil(max / step) * step);
	return { top, ticks: Array.from({ length: top / step + 1 }, (_, i) => i * step) };
}

/** The polyline points of one series scaled into the plot area. */
export function points(values: number[], top: number): string {
	const width = W - PAD.left - PAD.right;
	const height = H - PAD.top - PAD.bottom;
	const dx = values.length > 1 ? width / (values.length - 1) : 0;
	return values.map((v, i) => `${(PAD.left + i * dx).toFixed(1)},${(PAD.top + height - (v / top) * height).toFixed(1)}`).join(" ");
}

export function LineChart(props: { id: string; title: string; days: string[]; series: Series[] }) {
	const { top, ticks: values } = axis(Math.max(0, ...props.series.flatMap((s) => s.values)));
	const height = H - PAD.top - PAD.bottom;
	const ticks = values.map((v) => ({ y: PAD.top + height - (v / top) * height, label: String(v) }));
	const labelDays = [...new Set([0, Math.floor((props.days.length - 1) / 2), props.days.length - 1])].filter((i) => i >= 0);
	const dx = props.days.length > 1 ? (W - PAD.left - PAD.right) / (props.days.length - 1) : 0;
	return (
		<figure>
			<svg class="chart" viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby={`${props.id}-title`}>
				<title id={`${props.id}-title`}>{props.title}</title>
				{ticks.map((t) => (
					<g>
						<line x1={PAD.left} x2={W - PAD.right} y1={t.y} y2={t.y} stroke="#d0d7de" stroke-width="1" />
						<text x={PAD.left - 6} y={t.y + 4} text-anchor="end" font-size="11" fill="#57606a">
							{t.label}
						</text>
					</g>
				))}
				{labelDays.map((i) => (
					<text
						x={PAD.left + i * dx}
						y={H - 8}
						text-anchor={i === 0 ? "start" : i === props.days.length - 1 ? "end" : "middle"}
						font-size="11"
						fill="#57606a"
					>
						{props.days[i]}
					</text>
				))}
				{props.series.map((s) => (
					<polyline points={points(s.values, top)} fill="none" stroke={s.color} stroke-width="2.5" stroke-linejoin="round" />
				))}
				{/* A dot on each day with a count, so a single busy day (or a one-day range) is seen, not only a line's bend. */}
				{props.series.map((s) =>
					points(s.values, top)
						.split(" ")
						.map((p, i) => {
							const [x, y] = p.split(",");
							return (s.values[i] ?? 0) > 0 ? <circle cx={x} cy={y} r="3.5" fill={s.color} /> : null;
						}),
				)}
			</svg>
			<figcaption class="legend">
				{props.series.map((s) => (
					<span style={`--c:${s.color}`}>
						{s.label}: {s.values.reduce((a, b) => a + b, 0)}
					</span>
				))}
			</figcaption>
		</figure>
	);
}
