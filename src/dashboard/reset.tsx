/** @jsxImportSource hono/jsx */
import type { Context } from "hono";
import { hashPassword, passwordProblem } from "../admin/passwords";
import { findPersonByEmail } from "../db/members";
import { findPasswordReset, insertPasswordReset, usePasswordReset } from "../db/password-resets";
import { sha256Hex } from "../domain/crypto";
import { randomString } from "../domain/ids";
import { publicOrigin } from "../domain/public-origin";
import { allowResetRequest } from "../http/admin-throttle";
import { clientIp, RETRY_AFTER_SECONDS } from "../http/rate-limits";
import { passwordResetEmail } from "../outbox/emails";
import { sendEmail } from "../outbox/send-email";
import type { Dash } from "./context";
import { Csrf, Field, Page } from "./layout";
import { PASSKEY_REQUIRED, passwordSessionAllowed } from "./passkeys";
import { checkLoginCsrf, loginCsrf, startSession } from "./session";

/**
 * Password reset by email (docs/operators.md): a person asks with their
 * email; the answer is the same for known and unknown addresses, and the
 * lookup and the email happen after it (waitUntil), so timing tells nothing
 * either. The link (one use, 1 hour) sets a new password and ends every
 * session of the person.
 *
 * Requests never count toward the sign-in limits (issue 47: twelve requests
 * for one email from twelve addresses locked the member out of signing in
 * with the right password). Instead: at most RESET_EMAILS_PER_HOUR emails
 * per person an hour (beyond that the answer is the same and nothing is
 * sent), and the form from one address is held to the limiter's 10 per 10 s
 * under a key of its own. The link is built on the deployment's public origin
 * (PUBLIC_ORIGIN), never on the request's Host.
 */

export const RESET_TTL_MS = 60 * 60 * 1000;
/** Reset emails one person can be sent per hour (the resets made in the last RESET_TTL_MS). */
export const RESET_EMAILS_PER_HOUR = 3;
const ALNUM = "0123456789abcdefghijklmnopqrstuvwxyz";
const SENT = "If that email belongs to a member, a link to choose a new password is on its way. It works once, for 1 hour.";

function RequestPage(props: { csrf: string; ok?: string; error?: string }) {
	return (
		<Page title="Reset your password" ok={props.ok} error={props.error}>
			<form class="grid login" method="post" action="/dashboard/reset">
				<Csrf token={props.csrf} />
				<Field label="Email" name="email" type="email" required attrs={{ autocomplete: "username" }} />
				<div>
					<button type="submit">Email me a link</button>
				</div>
			</form>
		</Page>
	);
}

function ChoosePage(props: { csrf: string; email: string; error?: string }) {
	return (
		<Page title="Choose a new password" error={props.error}>
			<form class="grid login" method="post">
				<Csrf token={props.csrf} />
				<p>
					For <strong>{props.email}</strong>. Every signed-in session of yours ends.
				</p>
				<Field label="New password" name="password" type="password" required attrs={{ autocomplete: "new-password" }} />
				<Field label="Repeat the password" name="password2" type="password" required attrs={{ autocomplete: "new-password" }} />
				<div>
					<button type="submit">Set the password and sign in</button>
				</div>
			</form>
		</Page>
	);
}

const gone = () => <Page title="Link not valid" error="This link was used already, has expired, or never existed. Ask for a new one." />;

/** Makes the reset and sends its email, when the email is a person's (after the answer: its timing is the same either way). */
async function sendReset(c: Context<any>, email: string): Promise<void> {
	const person = await findPersonByEmail(c.env.DB, email);
	if (!person) return;
	const origin = publicOrigin(c.env);
	if (!origin) {
		console.error(JSON.stringify({ msg: "password reset email not sent: PUBLIC_ORIGIN is not set (docs/operators.md)" }));
		return;
	}
	const token = `rst_${randomString(43, ALNUM)}`;
	const now = Date.now();
	const reset = { tokenHash: await sha256Hex(token), personid: person.personid, expiresAt: now + RESET_TTL_MS };
	if (!(await insertPasswordReset(c.env.DB, reset, { cap: RESET_EMAILS_PER_HOUR, now }))) return;
	const url = `${origin}/dashboard/reset/${token}`;
	await sendEmail(c.env, { from: c.env.DEFAULT_EMAIL_SENDER, ...passwordResetEmail({ to: person.email, url }) });
}

export function registerPasswordReset(dash: Dash) {
	dash.get("/reset", async (c) => c.html(<RequestPage csrf={await loginCsrf(c)} />));

	dash.post("/reset", async (c) => {
		const form = await c.req.parseBody();
		const again = async (status: 200 | 403 | 429, message: { ok?: string; error?: string }) =>
			c.html(<RequestPage csrf={await loginCsrf(c)} {...message} />, status);
		if (!(await checkLoginCsrf(c, String(form._csrf ?? "")))) return again(403, { error: "The form expired; try again." });
		const email = String(form.email ?? "")
			.trim()
			.toLowerCase()
			.slice(0, 254);
		if (!(await allowResetRequest(c.env, clientIp(c.req.raw)))) {
			c.header("Retry-After", String(RETRY_AFTER_SECONDS));
			return again(429, { error: "Too many requests. Wait 10 seconds." });
		}
		if (email.includes("@")) {
			c.executionCtx.waitUntil(
				sendReset(c, email).catch((err) => console.error(JSON.stringify({ msg: "password reset email failed", error: String(err) }))),
			);
		}
		return again(200, { ok: SENT });
	});

	dash.get("/reset/:token", async (c) => {
		const reset = await findPasswordReset(c.env.DB, await sha256Hex(c.req.param("token")), Date.now());
		if (!reset) return c.html(gone(), 404);
		return c.html(<ChoosePage csrf={await loginCsrf(c)} email={reset.email} />);
	});

	dash.post("/reset/:token", async (c) => {
		const tokenHash = await sha256Hex(c.req.param("token"));
		const reset = await findPasswordReset(c.env.DB, tokenHash, Date.now());
		if (!reset) return c.html(gone(), 404);
		const form = await c.req.parseBody();
		const again = async (error: string, status: 400 | 403) =>
			c.html(<ChoosePage csrf={await loginCsrf(c)} email={reset.email} error={error} />, status);
		if (!(await checkLoginCsrf(c, String(form._csrf ?? "")))) return again("The form expired; try again.", 403);
		const password = String(form.password ?? "");
		const problem = passwordProblem(password) ?? (password === String(form.password2 ?? "") ? null : "The two passwords differ.");
		if (problem) return again(problem, 400);
		if (!(await usePasswordReset(c.env.DB, tokenHash, Date.now(), await hashPassword(password)))) return c.html(gone(), 404);
		if (!(await passwordSessionAllowed(c.env.DB, reset.personid))) {
			return c.html(<Page title="Password changed" ok={`Your password was changed. ${PASSKEY_REQUIRED}`} />);
		}
		await startSession(c, reset.personid, "password");
		return c.redirect("/dashboard", 303);
	});
}
