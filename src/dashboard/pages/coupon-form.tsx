/** @jsxImportSource hono/jsx */
import type { ApiResult } from "../api";
import { plainError } from "../form-errors";
import { Csrf } from "../layout";

/**
 * The campaign page's coupon form (a pasted list or a CSV file). Refused, it
 * comes back with the codes as typed and the message at the box in the
 * operator's words (issue 48): which code, and what is wrong with it.
 */

export interface CouponFormState {
	/** The codes box as typed. */
	codes: string;
	error?: string | undefined;
}

export function CouponForm({ action, csrf, state }: { action: string; csrf: string; state?: CouponFormState | undefined }) {
	const error = state?.error;
	return (
		<form class="grid" method="post" action={action} enctype="multipart/form-data" aria-labelledby="coupons">
			<Csrf token={csrf} />
			<div class={error ? "invalid" : undefined}>
				<label for="f-codes">
					Codes <span class="hint">(one per line)</span>
				</label>
				<textarea id="f-codes" name="codes" rows={4} {...(error ? { "aria-invalid": "true", "aria-describedby": "f-codes-error" } : {})}>
					{state?.codes ?? ""}
				</textarea>
				{error && (
					<p id="f-codes-error" class="field-error">
						{error}
					</p>
				)}
			</div>
			<div>
				<label for="f-csv">
					Or a CSV file <span class="hint">(first column the code; optional name and details columns)</span>
				</label>
				<input id="f-csv" type="file" name="csv" accept=".csv,text/csv,text/plain" />
			</div>
			<div>
				<button type="submit">Add codes</button>
			</div>
		</form>
	);
}

/** When the form has nothing to add. */
export const NO_CODES = "Paste codes (one per line) or choose a CSV file.";

const PARTS: Record<string, string> = {
	coupon: "the code",
	couponname: "its name",
	coupondetails: "its details",
	couponimage: "its image",
};
const short = (code: string) => (code.length > 24 ? `${code.slice(0, 24)}…` : code);

/** The admin API's refusal of `coupons` in the operator's words: "Code 2 (SPRING…): the code must be at most 200 characters." */
export function couponError(res: ApiResult<unknown>, coupons: { coupon: string }[], fromFile: boolean): string {
	const errors = (res.body as { errors?: { field?: unknown; message?: unknown }[] } | null)?.errors ?? [];
	const words = errors.flatMap(({ field, message }) => {
		if (typeof field !== "string" || typeof message !== "string") return [];
		const item = /^coupons\.(\d+)\.(\w+)$/.exec(field);
		if (item)
			return [
				`Code ${Number(item[1]) + 1} (${short(coupons[Number(item[1])]?.coupon ?? "")}): ${PARTS[item[2] ?? ""] ?? item[2]} ${message}.`,
			];
		return [`${message.replace(/coupons/g, "codes")}.`.replace(/^./, (ch) => ch.toUpperCase())];
	});
	const said = words.length > 0 ? words.join(" ") : plainError(res.error);
	// A file input cannot be filled again by the page: say so, rather than let it look kept.
	return `The codes were not added. ${said}${fromFile ? " Choose the CSV file again after fixing it." : ""}`;
}
