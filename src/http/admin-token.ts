import { ApiError } from "./errors";

/**
 * The admin token policy. A deployed Worker refuses to serve the admin API and
 * the dashboard while ADMIN_TOKEN is guessable: shorter than
 * MIN_ADMIN_TOKEN_LENGTH or one of the defaults that ever appeared in this
 * repository's examples. It answers 503 `admin_token_insecure` naming the fix
 * and logs the same, instead of letting anyone sign in with `dev-admin-token`.
 *
 * "Deployed" is every Worker whose var ENVIRONMENT is not `development`: only
 * local configurations set it (.dev.vars from .dev.vars.example, the tests'
 * vitest.config.ts, scripts/dev-service.mjs), never wrangler.toml, so a
 * deployment is strict unless someone sets the var there on purpose.
 */

export const MIN_ADMIN_TOKEN_LENGTH = 32;
/** Tokens that the examples, scripts or tests of this repository name: known to everyone who reads it. */
export const DOCUMENTED_DEFAULT_TOKENS: readonly string[] = ["change-me", "dev-admin-token", "test-admin-token"];

export interface AdminTokenSettings {
	ADMIN_TOKEN?: string;
	ENVIRONMENT?: string;
}

const FIX =
	'Set a random ADMIN_TOKEN of at least 32 characters: `openssl rand -base64 32 | npx wrangler secret put ADMIN_TOKEN` (README, "Admin token").';

/** What anyone calling the admin API or dashboard is told while the token is refused. */
export const INSECURE_MESSAGE = `The admin API and dashboard are off until ADMIN_TOKEN is a random secret of at least ${MIN_ADMIN_TOKEN_LENGTH} characters that is not a documented default. ${FIX} The Worker's log says what is wrong.`;

/** A local Worker (`wrangler dev`, the tests): never true where deployed, since only local configurations set the var. */
export const isLocalDevelopment = (env: { ENVIRONMENT?: string }) => env.ENVIRONMENT === "development";

/** What is wrong with the token for this environment, or null when the admin API and dashboard may be served. */
export function adminTokenProblem(env: AdminTokenSettings): string | null {
	if (isLocalDevelopment(env)) return null;
	const token = env.ADMIN_TOKEN ?? "";
	if (token === "") return `ADMIN_TOKEN is not set. ${FIX}`;
	if (DOCUMENTED_DEFAULT_TOKENS.includes(token)) return `ADMIN_TOKEN is a documented default, known to anyone. ${FIX}`;
	if (token.length < MIN_ADMIN_TOKEN_LENGTH) {
		return `ADMIN_TOKEN is ${token.length} characters long, fewer than ${MIN_ADMIN_TOKEN_LENGTH}: it could be guessed. ${FIX}`;
	}
	return null;
}

/** Problems already logged by this isolate: one clear log line each, not one per request. */
const logged = new Set<string>();

/** True while the token is refused here (and then logged once per isolate with what is wrong). */
export function adminTokenRefused(env: AdminTokenSettings): boolean {
	const problem = adminTokenProblem(env);
	if (!problem) return false;
	if (!logged.has(problem)) {
		logged.add(problem);
		console.error(JSON.stringify({ msg: "admin API and dashboard refused: insecure ADMIN_TOKEN", problem }));
	}
	return true;
}

/** Throws 503 `admin_token_insecure` while the token is refused. */
export function refuseInsecureAdminToken(env: AdminTokenSettings): void {
	// The answer names the fix but not the token's length: the log, read by the operator, says exactly what is wrong.
	if (adminTokenRefused(env)) throw new ApiError(503, "admin_token_insecure", INSECURE_MESSAGE);
}
