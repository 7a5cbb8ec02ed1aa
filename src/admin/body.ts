import type { z } from "zod";
import { ApiError } from "../http/errors";
import { describeZodError } from "../http/fields";
import { readJsonObject } from "../http/json-body";
import { refuseBadText, toLineFeeds } from "../http/text-hygiene";

/** An admin request's JSON body, checked against `schema`: 400 validation_failed naming each failing field. */
export async function body<S extends z.ZodType>(request: Request, schema: S): Promise<z.output<S>> {
	const raw = toLineFeeds(await readJsonObject(request));
	refuseBadText(raw);
	const parsed = schema.safeParse(raw);
	if (parsed.success) return parsed.data;
	// With the input, so a missing field and a wrong one are told apart (zod does not report what it got).
	const { message, fields, errors } = describeZodError(parsed.error, raw);
	throw new ApiError(400, "validation_failed", message, { fields, errors });
}
