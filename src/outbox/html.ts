/** Helpers for rendering email bodies: every interpolated value is escaped. */

const HTML_ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Text safe inside HTML element content and quoted attribute values. */
export function escapeHtml(text: string): string {
	return text.replace(/[&<>"']/g, (ch) => HTML_ESCAPES[ch]!);
}

/** An http(s) URL safe for an `href`, or `#` for anything else (javascript:, data:, ...). */
export function safeHref(url: string): string {
	try {
		const parsed = new URL(url);
		return parsed.protocol === "http:" || parsed.protocol === "https:" ? escapeHtml(parsed.href) : "#";
	} catch {
		return "#";
	}
}

/** Tagged template that escapes each interpolated value; nest with `raw()` for trusted markup. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): string {
	let out = strings[0] ?? "";
	values.forEach((value, i) => {
		out += value instanceof RawHtml ? value.value : escapeHtml(String(value ?? ""));
		out += strings[i + 1] ?? "";
	});
	return out;
}

export class RawHtml {
	constructor(readonly value: string) {}
}

/** Marks already-rendered markup so `html` does not escape it again. */
export const raw = (value: string) => new RawHtml(value);
