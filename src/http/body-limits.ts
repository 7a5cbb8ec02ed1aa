/**
 * Structural limits of a request body, checked right after JSON.parse and
 * before anything else (authentication included), so no input can make a
 * later recursive step (normalization, zod, JSON.stringify) overflow the
 * stack or spend unbounded work. The walk is iterative: it cannot overflow.
 */

/** Deepest nesting of objects and arrays accepted (the body object itself is depth 1). */
export const MAX_DEPTH = 32;
/** Object keys in the whole body, at most. */
export const MAX_KEYS = 5_000;
/** Entries of any one array (`rewardslist`, `rewarddtlids`, `coupons`, ...), at most. */
export const MAX_LIST_ENTRIES = 1_000;

export interface LimitViolation {
	/** Which limit: `depth`, `keys` or `list`. */
	limit: "depth" | "keys" | "list";
	/** Dotted path of the value that broke it (`body` for the root). */
	field: string;
	message: string;
}

/** The first limit `value` breaks, or null when it is within all of them. */
export function checkBodyLimits(value: unknown): LimitViolation | null {
	let keys = 0;
	// Each entry: a container and its path and depth. An explicit stack instead of recursion.
	const stack: { node: object; path: string; depth: number }[] = [];
	if (typeof value === "object" && value !== null) stack.push({ node: value, path: "", depth: 1 });
	while (stack.length > 0) {
		const { node, path, depth } = stack.pop()!;
		const field = path || "body";
		if (depth > MAX_DEPTH) return { limit: "depth", field, message: `The body is nested deeper than ${MAX_DEPTH} levels (at ${field}).` };
		if (Array.isArray(node)) {
			if (node.length > MAX_LIST_ENTRIES) {
				return { limit: "list", field, message: `${field}: at most ${MAX_LIST_ENTRIES} entries are accepted.` };
			}
			node.forEach((item, i) => {
				if (typeof item === "object" && item !== null)
					stack.push({ node: item, path: path ? `${path}.${i}` : String(i), depth: depth + 1 });
			});
			continue;
		}
		for (const key of Object.keys(node)) {
			if (++keys > MAX_KEYS) return { limit: "keys", field, message: `The body has more than ${MAX_KEYS} keys.` };
			const child = (node as Record<string, unknown>)[key];
			if (typeof child === "object" && child !== null) stack.push({ node: child, path: path ? `${path}.${key}` : key, depth: depth + 1 });
		}
	}
	return null;
}
