/** Form values and the stored rule lists shown as text: shared by forms.ts and campaign-typed.ts. */

export type FormValues = Record<string, string | File | (string | File)[]>;

/** A textarea's line breaks as LF: browsers send them as CR LF (HTML's form encoding), the API's own callers as LF. */
export const normalizeNewlines = (value: string) => value.replace(/\r\n?/g, "\n");

/** A stored list-valued rule field as comma-separated text, or null when it is not a list of words (kept as set). */
export function listText(value: unknown): string | null {
	if (value === null || value === undefined || value === "") return "";
	if (typeof value === "string" && !value.includes(",")) return value;
	if (Array.isArray(value) && value.every((v) => typeof v === "string" && v.trim() !== "" && !v.includes(","))) return value.join(", ");
	return null;
}

/**
 * A rule's product list as text: `include:SKU-1, exclude:SKU-2` (a bare
 * id is included); null when the stored value has another shape (kept as set).
 */
export function productsText(value: unknown): string | null {
	if (!Array.isArray(value)) return listText(value);
	const parts: string[] = [];
	for (const entry of value) {
		const { type, productid } = (typeof entry === "object" && entry !== null ? entry : {}) as Record<string, unknown>;
		if ((type !== "include" && type !== "exclude") || typeof productid !== "string" || productid.includes(",")) return null;
		parts.push(`${type}:${productid}`);
	}
	return parts.join(", ");
}
