import type { z } from "zod";

/** One admin API route as the OpenAPI document describes it (admin.ts, admin-access.ts). */
export interface AdminRoute {
	method: "get" | "post" | "patch" | "put" | "delete";
	/** OpenAPI form, relative to /admin/v1: `/apps/{appid}`. */
	path: string;
	summary: string;
	body?: z.ZodType;
	/** A raw (non-JSON) body: the content types it may have (e.g. an uploaded image). */
	rawBody?: { types: string[]; description: string };
	/** Error answers of this route beyond the common ones (status: when). */
	errors?: Record<string, string>;
	query?: Record<string, z.ZodType>;
	status: number;
	response: z.ZodType;
}
