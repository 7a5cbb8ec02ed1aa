import { env, exports } from "cloudflare:workers";

export const ADMIN_TOKEN = "test-admin-token";
const BASE = "http://service.test";

/** Calls the Worker as a client would, through its default export. */
export function request(path: string, init: RequestInit = {}): Promise<Response> {
	return exports.default.fetch(new Request(`${BASE}${path}`, init));
}

/** A parsed JSON response with its status. */
export interface JsonResponse<T = Record<string, any>> {
	status: number;
	body: T;
}

async function json<T>(response: Response): Promise<JsonResponse<T>> {
	return { status: response.status, body: (await response.json()) as T };
}

/** An admin API call with the test admin token. */
export async function admin<T = Record<string, any>>(method: string, path: string, body?: unknown): Promise<JsonResponse<T>> {
	return json(
		await request(`/admin/v1${path}`, {
			method,
			headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
			body: body === undefined ? undefined : JSON.stringify(body),
		}),
	);
}

/**
 * Every app `GET /admin/v1/apps` lists, page after page (200 a page): the
 * apps a test made need not be on the first page of a database other tests
 * wrote to as well (a test never assumes it has the database to itself).
 */
export async function listedApps(): Promise<{ appid: string; name: string }[]> {
	const apps: { appid: string; name: string }[] = [];
	let cursor: string | null = null;
	do {
		const page: JsonResponse<{ apps: { appid: string; name: string }[]; nextcursor: string | null }> = await admin(
			"GET",
			`/apps?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
		);
		apps.push(...page.body.apps);
		cursor = page.body.nextcursor;
	} while (cursor !== null);
	return apps;
}

export interface Credentials {
	appid: string;
	apikey: string;
	privatekey: string;
	webhooksecret: string;
}

/** Calls a public operation with the given body (credentials included by the caller). */
export async function call<T = Record<string, any>>(operation: string, body: Record<string, unknown>): Promise<JsonResponse<T>> {
	return json(
		await request(`/saas/v1_0/${operation}`, {
			method: "POST",
			headers: { "content-type": "application/json" },
			body: JSON.stringify(body),
		}),
	);
}

/** Binds `call` to one app's credentials. */
export function client(creds: Pick<Credentials, "apikey" | "privatekey">) {
	return <T = Record<string, any>>(operation: string, body: Record<string, unknown> = {}) =>
		call<T>(operation, { apikey: creds.apikey, privatekey: creds.privatekey, ...body });
}

/** A campaign body with sensible defaults for tests. */
export function campaignBody(overrides: Record<string, unknown> = {}) {
	return {
		campaignname: "Give $10, get $10",
		offertitle: "Give $10 & get $10!",
		offerdescription: "Invite friends: 100% of them get $10.",
		campaignbgcolor: "#112233",
		campaignstartdate: "2026-11-21T22:05:00Z",
		widgetfont: "Inter",
		rewardtype: 3,
		terms: "Rewards expire after 1 year & can't be combined.",
		rewardrules: [
			{ rewardusertype: "Referrer", eventname: "Signup", reward: 10, rewardunit: "USD" },
			{ rewardusertype: "Friend", eventname: "Signup", reward: 10, rewardunit: "USD" },
		],
		socialactions: [
			{ socialactionid: "5", socialactionname: "Mail", sharemessage: "Join me: SHARE_URL (code SHARE_CODE)", displayorder: 2 },
			{ socialactionid: "1", socialactionname: "Facebook", sharemessage: "Try it & save!", displayorder: 1 },
		],
		...overrides,
	};
}

/** App settings for a webhook URL at the test receiver (an app without one records no webhook events). */
export const withWebhook = () => ({ webhookurl: `${env.WEBHOOK_RECEIVER_URL}/hooks/ops-${crypto.randomUUID()}` });

/** Creates an app with one campaign; returns its credentials and campaign id. */
export async function createApp(campaign: Record<string, unknown> = {}, app: Record<string, unknown> = {}) {
	const created = await admin<Credentials>("POST", "/apps", {
		name: "Test app",
		landingurl: "https://shop.example.com/join?src=ref",
		...app,
	});
	if (created.status !== 201) throw new Error(`app create failed: ${JSON.stringify(created.body)}`);
	const camp = await admin<{ campaignid: number }>("POST", `/apps/${created.body.appid}/campaigns`, campaignBody(campaign));
	if (camp.status !== 201) throw new Error(`campaign create failed: ${JSON.stringify(camp.body)}`);
	return { ...created.body, campaignid: camp.body.campaignid, api: client(created.body) };
}
