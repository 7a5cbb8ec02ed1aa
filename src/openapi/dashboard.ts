/**
 * Paths outside the public and admin APIs that scripts and browsers call:
 * the dashboard's passkey routes (issue 32, docs/operators.md "Passkeys") and
 * the local mailbox (development only). The dashboard's pages themselves are
 * HTML, not listed.
 */

const formBody = (properties: Record<string, unknown>, required: string[]) => ({
	required: true,
	content: {
		"application/x-www-form-urlencoded": { schema: { type: "object", properties, required } },
	},
});

const csrf = { type: "string", description: "The page's CSRF token (the form's `_csrf` field)" };
const response = {
	type: "string",
	description: "The browser's WebAuthn answer as JSON (@simplewebauthn/browser's RegistrationResponseJSON or AuthenticationResponseJSON)",
};
const options = (what: string) => ({
	description: `The ${what} options (W3C WebAuthn, JSON form as @simplewebauthn/browser takes them); the challenge works once, within 5 minutes`,
	content: { "application/json": { schema: { type: "object", properties: { challenge: { type: "string" } }, required: ["challenge"] } } },
});
const html = (description: string) => ({ description, content: { "text/html": { schema: { type: "string" } } } });
const seeOther = (where: string) => ({ description: `Redirect (303) to ${where}` });

/** A dashboard route: who may call it, in the rights table's words (docs/operators.md). */
function dashboardOperation(id: string, summary: string, who: string, extra: Record<string, unknown>) {
	return {
		operationId: `dashboard_${id}`,
		tags: ["Dashboard"],
		summary,
		description: `${who} Authenticated by the dashboard's session cookie (or, before sign-in, the sign-in form's cookie) and the form's CSRF token; not by an admin token.`,
		"x-required-role": who.startsWith("Anyone") ? "none" : "member",
		...extra,
	};
}

export const dashboardPaths = () => ({
	"/dashboard/login/passkey/options": {
		post: dashboardOperation("passkey_signin_options", "Options to sign in with a passkey", "Anyone on the sign-in page.", {
			requestBody: formBody({ _csrf: csrf }, ["_csrf"]),
			responses: { "200": options("sign-in"), "403": { description: "The sign-in form expired (no or wrong CSRF token)" } },
		}),
	},
	"/dashboard/login/passkey": {
		post: dashboardOperation("passkey_signin", "Sign in with a passkey", "Anyone on the sign-in page.", {
			requestBody: formBody({ _csrf: csrf, response }, ["_csrf", "response"]),
			responses: {
				"303": seeOther("/dashboard, signed in"),
				"401": html("The passkey is unknown, or its answer did not verify, expired or was used already"),
				"403": html("The sign-in form expired"),
				"429": html("Too many failed sign-ins from this address (Retry-After)"),
			},
		}),
	},
	"/dashboard/account/passkeys/options": {
		post: dashboardOperation(
			"passkey_register_options",
			"Options to register a passkey of the signed-in member",
			"A signed-in member, for their own passkeys (any role in any app).",
			{
				requestBody: formBody({ _csrf: csrf }, ["_csrf"]),
				responses: {
					"200": options("registration"),
					"403": { description: "A password session of a member who has a passkey already while an app of theirs requires them" },
					"404": html("The admin token's session: it has no account"),
				},
			},
		),
	},
	"/dashboard/account/passkeys": {
		post: dashboardOperation(
			"passkey_register",
			"Register a passkey of the signed-in member",
			"A signed-in member, for their own passkeys.",
			{
				requestBody: formBody({ _csrf: csrf, response, name: { type: "string", maxLength: 60 } }, ["_csrf", "response"]),
				responses: { "303": seeOther("/dashboard/account with the outcome") },
			},
		),
	},
	"/dashboard/account/passkeys/remove": {
		post: dashboardOperation(
			"passkey_remove",
			"Remove one of the signed-in member's passkeys",
			"A signed-in member, for their own passkeys.",
			{
				requestBody: formBody({ _csrf: csrf, credentialid: { type: "string", description: "The passkey's credential id (base64url)" } }, [
					"_csrf",
					"credentialid",
				]),
				responses: { "303": seeOther("/dashboard/account with the outcome") },
			},
		),
	},
});

/** GET /dev/mail (http/dev-mail.ts): only where ENVIRONMENT=development; a deployed Worker answers 404. */
export const devPaths = () => ({
	"/dev/mail": {
		get: {
			operationId: "dev_mail",
			tags: ["Development"],
			summary: "Local development only: every email the service sent, newest first (a deployed Worker answers 404 and keeps no mail)",
			description:
				"Served only when ENVIRONMENT=development (`npm start`, `wrangler dev`, the tests); needs no credential, as the local mailbox of docs/operators.md.",
			"x-required-role": "none",
			responses: {
				"200": {
					description: "The local mailbox",
					content: {
						"application/json": {
							schema: {
								type: "object",
								properties: {
									mail: {
										type: "array",
										items: {
											type: "object",
											properties: {
												to: { type: "string" },
												subject: { type: "string" },
												text: { type: "string" },
												html: { type: "string" },
												sentat: { type: "string", description: "ISO 8601" },
											},
											required: ["to", "subject", "text", "html", "sentat"],
										},
									},
								},
								required: ["mail"],
							},
						},
					},
				},
				"404": { description: "Not in development (a deployed Worker)" },
			},
		},
	},
});
