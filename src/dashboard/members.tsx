/** @jsxImportSource hono/jsx */
import type { Context } from "hono";
import { hashPassword, passwordProblem, verifyPassword } from "../admin/passwords";
import { acceptInvitation, findInvitation, findPersonByEmail, type PasswordRecord, type Person } from "../db/members";
import { sha256Hex } from "../domain/crypto";
import { type AdminLimiters, countAdminFailure, refuseThrottledAdmin } from "../http/admin-throttle";
import { ApiError } from "../http/errors";
import { clientIp, RETRY_AFTER_SECONDS } from "../http/rate-limits";
import type { Dash } from "./context";
import { Csrf, Field, Page } from "./layout";
import { PASSKEY_REQUIRED, passwordSessionAllowed } from "./passkeys";
import { checkLoginCsrf, loginCsrf, startSession } from "./session";

/**
 * Members' sign-in (docs/operators.md): with the email and password chosen on
 * accepting an invitation. Wrong passwords count per address (with wrong
 * admin tokens) and per target email (http/admin-throttle.ts), and an
 * address or email over the limit is refused before the password is
 * compared; an unknown email costs the same PBKDF2 work as a known one, so
 * timing does not tell which emails exist.
 */

/** A fixed record to verify against when the email is unknown (never matches: its hash is of nothing typed). */
const DECOY = { hash: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", salt: "AAAAAAAAAAAAAAAAAAAAAA==", iterations: 100_000 };

const credentials = (p: Person | null) =>
	p?.password_hash && p.password_salt && p.password_iterations
		? { hash: p.password_hash, salt: p.password_salt, iterations: p.password_iterations }
		: null;

/** The person signing in, "wrong", or "throttled". */
export async function checkMemberSignIn(
	env: AdminLimiters & { DB: D1Database },
	ip: string,
	email: string,
	password: string,
): Promise<Person | "wrong" | "throttled"> {
	const target = email.trim().toLowerCase().slice(0, 254);
	try {
		refuseThrottledAdmin(ip, target);
		const person = target ? await findPersonByEmail(env.DB, target) : null;
		const record = credentials(person);
		const ok = await verifyPassword(password, record ?? DECOY);
		if (ok && record && person) return person;
		await countAdminFailure(env, { ip, target, credential: password });
		return "wrong";
	} catch (err) {
		if (err instanceof ApiError && err.status === 429) return "throttled";
		throw err;
	}
}

/** An existing person's password, checked under the sign-in limits: "ok", "wrong", or "throttled" (never a thrown 429). */
async function provePassword(
	env: AdminLimiters,
	ip: string,
	email: string,
	password: string,
	record: PasswordRecord,
): Promise<"ok" | "wrong" | "throttled"> {
	try {
		refuseThrottledAdmin(ip, email);
		if (await verifyPassword(password, record)) return "ok";
		await countAdminFailure(env, { ip, target: email, credential: password });
		return "wrong";
	} catch (err) {
		if (err instanceof ApiError && err.status === 429) return "throttled";
		throw err;
	}
}

function InvitationPage(props: { csrf: string; email: string; appname: string; existing: boolean; error?: string }) {
	return (
		<Page title={`Join ${props.appname}`} error={props.error}>
			<form class="grid login" method="post">
				<Csrf token={props.csrf} />
				<p>
					You were invited as <strong>{props.email}</strong>.{" "}
					{props.existing ? "Enter your password to accept." : "Choose a password (at least 12 characters) to accept."}
				</p>
				<Field
					label="Password"
					name="password"
					type="password"
					required
					attrs={{ autocomplete: props.existing ? "current-password" : "new-password" }}
				/>
				{!props.existing && (
					<Field label="Repeat the password" name="password2" type="password" required attrs={{ autocomplete: "new-password" }} />
				)}
				<div>
					<button type="submit">Accept and sign in</button>
				</div>
			</form>
		</Page>
	);
}

const gone = () => (
	<Page
		title="Invitation not valid"
		error="This invitation was used already, has expired, or never existed. Ask an owner of the app for a new one."
	/>
);

async function invitationOf(c: Context<any>) {
	return findInvitation(c.env.DB, await sha256Hex(c.req.param("token") ?? ""), Date.now());
}

export function registerMemberSignIn(dash: Dash, loginPage: (csrf: string, error?: string) => unknown) {
	dash.post("/login/member", async (c) => {
		const form = await c.req.parseBody();
		const render = async (error: string, status: 401 | 403 | 429) => c.html(loginPage(await loginCsrf(c), error) as string, status);
		if (!(await checkLoginCsrf(c, String(form._csrf ?? "")))) return render("The form expired; try again.", 403);
		const outcome = await checkMemberSignIn(c.env, clientIp(c.req.raw), String(form.email ?? ""), String(form.password ?? ""));
		if (outcome === "throttled") {
			c.header("Retry-After", String(RETRY_AFTER_SECONDS));
			return render("Too many failed sign-ins from this address. Wait 10 seconds.", 429);
		}
		if (outcome === "wrong") return render("That email and password do not match a member.", 401);
		// The password was right, but an app of this person requires the passkey they have (docs/operators.md "Passkeys").
		if (!(await passwordSessionAllowed(c.env.DB, outcome.personid))) return render(PASSKEY_REQUIRED, 403);
		await startSession(c, outcome.personid, "password");
		return c.redirect("/dashboard", 303);
	});

	dash.get("/invitations/:token", async (c) => {
		const invitation = await invitationOf(c);
		if (!invitation) return c.html(gone(), 404);
		const props = { email: invitation.email, appname: invitation.appname, existing: invitation.password_hash !== null };
		return c.html(<InvitationPage csrf={await loginCsrf(c)} {...props} />);
	});

	dash.post("/invitations/:token", async (c) => {
		const invitation = await invitationOf(c);
		if (!invitation) return c.html(gone(), 404);
		const form = await c.req.parseBody();
		const password = String(form.password ?? "");
		const existing = credentials(invitation);
		const props = { email: invitation.email, appname: invitation.appname, existing: existing !== null };
		const again = async (error: string, status: 400 | 401 | 403 | 429) =>
			c.html(<InvitationPage csrf={await loginCsrf(c)} {...props} error={error} />, status);
		if (!(await checkLoginCsrf(c, String(form._csrf ?? "")))) return again("The form expired; try again.", 403);
		if (existing) {
			// The same limit as the sign-in form, per address and per person: refused before the compare when over it.
			const proof = await provePassword(c.env, clientIp(c.req.raw), invitation.email, password, existing);
			if (proof === "throttled") {
				c.header("Retry-After", String(RETRY_AFTER_SECONDS));
				return again("Too many failed attempts. Wait 10 seconds.", 429);
			}
			if (proof === "wrong") return again("That is not your password.", 401);
		}
		const problem = existing
			? null
			: (passwordProblem(password) ?? (password === String(form.password2 ?? "") ? null : "The two passwords differ."));
		if (problem) return again(problem, 400);
		const tokenHash = await sha256Hex(c.req.param("token"));
		if (!(await acceptInvitation(c.env.DB, tokenHash, Date.now(), existing ? null : await hashPassword(password))))
			return c.html(gone(), 404);
		if (!(await passwordSessionAllowed(c.env.DB, invitation.personid))) {
			return c.html(loginPage(await loginCsrf(c), `You joined ${invitation.appname}. ${PASSKEY_REQUIRED}`) as string, 200);
		}
		await startSession(c, invitation.personid, "password");
		return c.redirect(`/dashboard/apps/${invitation.appid}`, 303);
	});
}
