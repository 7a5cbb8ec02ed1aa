/** Campaign styling made safe for a stylesheet: anything unexpected falls back to a default. */

/** `#rrggbb` or white. */
export function safeColor(value: string | null | undefined): string {
	return value && /^#[0-9a-fA-F]{6}$/.test(value) ? value.toLowerCase() : "#ffffff";
}

/** Black or white, whichever reads better on `background` (WCAG relative luminance). */
export function textColorOn(background: string): string {
	const channel = (hex: string) => {
		const c = Number.parseInt(hex, 16) / 255;
		return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
	};
	const [r, g, b] = [1, 3, 5].map((i) => channel(background.slice(i, i + 2))) as [number, number, number];
	const luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b;
	return luminance > 0.179 ? "#111111" : "#ffffff";
}

const FALLBACK_FONTS = 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';

/** A font-family list: the campaign's font when its name is plain (letters, digits, spaces, dashes), then system fonts. No web font is loaded. */
export function fontStack(widgetfont: string | null | undefined): string {
	const name = (widgetfont ?? "").trim();
	return /^[A-Za-z0-9][A-Za-z0-9 -]{0,59}$/.test(name) ? `"${name}", ${FALLBACK_FONTS}` : FALLBACK_FONTS;
}
