/** @jsxImportSource hono/jsx */
import type { ApiResult } from "./api";
import { Field } from "./layout";

/**
 * A refused form in the operator's words (issue 48): the admin API names each
 * failing field and what it needs (`errors: [{ field, message }]`, admin/body.ts);
 * the page shows each next to its field, labelled as the form labels it
 * ("Landing URL must be an http(s) URL"), and a summary at the top, instead of
 * the API's "Invalid request. landingurl: ..." above an emptied form.
 */
export interface FormErrors {
	/** The top of the page: what happened, and anything not about one field. */
	summary: string;
	/** Field name -> its message, shown next to it. */
	fields: Record<string, string>;
}

const apiErrors = (body: unknown): { field: string; message: string }[] => {
	const errors = (body as { errors?: unknown } | null)?.errors;
	if (!Array.isArray(errors)) return [];
	return errors.filter((e): e is { field: string; message: string } => typeof e?.field === "string" && typeof e?.message === "string");
};

/** The API's words without its "Invalid request." prefix (written for API callers). */
export const plainError = (message: string) => message.replace(/^Invalid request\.\s*/, "");

/** `res` (refused) as a form's errors; `labels` maps the form's field names to their labels; `what` names what was not done. */
export function formErrors(res: ApiResult<unknown>, labels: Record<string, string>, what: string): FormErrors {
	const fields: Record<string, string> = {};
	const other: string[] = [];
	for (const e of apiErrors(res.body)) {
		const label = labels[e.field];
		if (label && !fields[e.field]) fields[e.field] = `${label} ${e.message}.`.replace(/\.\.$/, ".");
		else if (!label) other.push(`${e.field}: ${e.message}`);
	}
	const marked = Object.values(fields);
	if (marked.length === 0) return { summary: `${what}: ${plainError(res.error)}`, fields };
	const rest = other.length ? ` ${other.join("; ")}.` : "";
	return { summary: `${what}. ${marked.join(" ")}${rest}`, fields };
}

type FieldProps = Parameters<typeof Field>[0];

/** A Field that, refused, is marked (aria-invalid) and described by its message right under it. */
export function CheckedField(props: FieldProps & { error?: string | null }) {
	const { error, ...field } = props;
	if (!error) return <Field {...field} />;
	const id = field.id ?? `f-${field.name}`;
	return (
		<div class="invalid">
			<Field {...field} attrs={{ ...field.attrs, "aria-invalid": "true", "aria-describedby": `${id}-error` }} />
			<p id={`${id}-error`} class="field-error">
				{error}
			</p>
		</div>
	);
}
