import { z } from "zod";

/**
 * JSON text stored in a D1 column, read back through its zod schema: a row
 * written by an older deploy (or by hand) that no longer has the shape this
 * code relies on fails loudly, naming the table and column, instead of
 * flowing on with a type it does not have.
 */
export function parseStoredJson<S extends z.ZodType>(table: string, column: string, text: string, schema: S): z.output<S> {
	let value: unknown;
	try {
		value = JSON.parse(text);
	} catch {
		throw new Error(`${table}.${column}: the stored text is not JSON`);
	}
	const parsed = schema.safeParse(value);
	if (!parsed.success)
		throw new Error(`${table}.${column}: the stored JSON does not have the expected shape: ${z.prettifyError(parsed.error)}`);
	return parsed.data;
}
