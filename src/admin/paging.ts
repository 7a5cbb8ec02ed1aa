import type { Context } from "hono";
import { z } from "zod";
import { badRequest } from "../http/errors";
import type { AdminContext } from "./principal";

/**
 * Keyset paging of the admin lists: `limit` (1..200, default 50) and an
 * opaque `cursor`, the sort key of the last item of the previous page. New
 * rows sort before the cursor, so pages neither lose nor repeat items while
 * rows are added.
 */

const limitSchema = z.coerce.number().int().min(1).max(200).default(50);

export interface PageRequest<K> {
	limit: number;
	after: K | null;
}

export function encodeCursor(key: unknown[]): string {
	return btoa(JSON.stringify(key)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function decodeCursor(raw: string): unknown {
	try {
		return JSON.parse(atob(raw.replace(/-/g, "+").replace(/_/g, "/")));
	} catch {
		return undefined;
	}
}

/** Reads `limit` and `cursor` (whose key must match `key`); 400 validation_failed naming the bad one. */
export function pageRequest<K>(c: Context, key: z.ZodType<K>): PageRequest<K> {
	const limit = limitSchema.safeParse(c.req.query("limit") || undefined);
	if (!limit.success) throw badRequest("limit must be an integer from 1 to 200.", { fields: ["limit"] });
	const raw = c.req.query("cursor");
	if (!raw) return { limit: limit.data, after: null };
	const after = key.safeParse(decodeCursor(raw));
	if (!after.success) throw badRequest("cursor is not one this API gave out.", { fields: ["cursor"] });
	return { limit: limit.data, after: after.data };
}

/** Cuts the `limit + 1` rows a query read into a page and the cursor of the next one (null at the end). */
export function page<T>(rows: T[], limit: number, keyOf: (row: T) => unknown[]): { items: T[]; nextcursor: string | null } {
	const items = rows.slice(0, limit);
	const last = items.at(-1);
	return { items, nextcursor: rows.length > limit && last ? encodeCursor(keyOf(last)) : null };
}

/** Admin lists are paged: `limit` (1 to 200, default 50) and `cursor` (the previous page's `nextcursor`). */
const pageQuery = z.object({
	limit: z.coerce.number().int().min(1).max(200).default(50),
	cursor: z.string().max(200).optional(),
});

export function pageOf(c: AdminContext) {
	return pageQuery.parse({ limit: c.req.query("limit") ?? undefined, cursor: c.req.query("cursor") || undefined });
}
