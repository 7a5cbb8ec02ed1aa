import { decodeAnswer, encodeRequest } from "./encoding.js";
import { ReferralError } from "./errors.js";
import type { CallOptions, Input, OperationName, Output } from "./types.js";

export interface ClientOptions {
	/** The service's origin, e.g. `https://referrals.example.com`. */
	baseUrl: string;
	apikey: string;
	privatekey: string;
	/** Another fetch (a Worker's service binding, a test double); default the global one. */
	fetch?: typeof fetch;
	/** Retries after the first attempt of a retryable failure; default 3. */
	maxRetries?: number;
	/** A `Retry-After` longer than this is not waited for: the error is thrown; default 30 s. */
	maxRetryDelayMs?: number;
	/** Each attempt's time limit; default 30 s. */
	timeoutMs?: number;
}

/** Operations that change something: they carry an Idempotency-Key, the same on every retry (docs/api.md). */
const CHANGING = new Set<string>([
	"register",
	"updateuser",
	"applyreferrercode",
	"registerconversionevent",
	"reverseconversionevent",
	"redeemrewards",
	"changerewardstatus",
	"invokeoutreach",
	"remindfriend",
]);

/** Seconds or an HTTP date, as `Retry-After` carries it; null when absent or unreadable. */
export function retryAfterMs(header: string | null, now = Date.now()): number | null {
	if (header === null || header.trim() === "") return null;
	if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
	const at = Date.parse(header);
	return Number.isNaN(at) ? null : Math.max(0, at - now);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
	return new Promise((resolve, reject) => {
		if (signal?.aborted) return reject(signal.reason);
		const timer = setTimeout(resolve, ms);
		const abort = () => {
			clearTimeout(timer);
			reject(signal?.reason);
		};
		signal?.addEventListener("abort", abort, { once: true });
	});
}

/**
 * A client of the service's public operations. Texts go as the user typed
 * them (the client does the contract's URL-encoding and decodes campaign
 * texts); a failure throws `ReferralError`; retryable failures (network,
 * 5xx, 429, `retryable: true`) are retried a bounded number of times,
 * honouring `Retry-After`, with one Idempotency-Key across the attempts.
 */
export class ReferralClient {
	readonly #options: Required<Omit<ClientOptions, "fetch">> & { fetch: typeof fetch };

	constructor(options: ClientOptions) {
		if (!options.baseUrl || !options.apikey || !options.privatekey) throw new TypeError("baseUrl, apikey and privatekey are required");
		this.#options = {
			maxRetries: 3,
			maxRetryDelayMs: 30_000,
			timeoutMs: 30_000,
			...options,
			baseUrl: options.baseUrl.replace(/\/+$/, ""),
			fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
		};
	}

	/** Any operation by its contract name (for operations newer than this client's methods). */
	async call<Name extends OperationName>(operation: Name, input: Input<Name>, options: CallOptions = {}): Promise<Output<Name>> {
		const { baseUrl, apikey, privatekey, maxRetries, maxRetryDelayMs, timeoutMs } = this.#options;
		const body = JSON.stringify(encodeRequest({ ...input, apikey, privatekey }));
		const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
		if (CHANGING.has(operation)) headers["idempotency-key"] = options.idempotencyKey ?? crypto.randomUUID();
		for (let attempt = 0; ; attempt++) {
			const { error, answer, retryAfter } = await this.#attempt(
				`${baseUrl}/saas/v1_0/${operation}`,
				headers,
				body,
				timeoutMs,
				options.signal,
			);
			if (answer) return decodeAnswer(operation, answer) as Output<Name>;
			if (!error.retryable || attempt >= maxRetries || options.signal?.aborted) throw error;
			const backoff = Math.min(250 * 2 ** attempt, 8_000) * (0.5 + Math.random() / 2);
			const wait = retryAfter ?? backoff;
			if (wait > maxRetryDelayMs) throw error;
			await sleep(wait, options.signal);
		}
	}

	async #attempt(url: string, headers: Record<string, string>, body: string, timeoutMs: number, signal?: AbortSignal) {
		const signals = [AbortSignal.timeout(timeoutMs), ...(signal ? [signal] : [])];
		let res: Response;
		try {
			res = await this.#options.fetch(url, { method: "POST", headers, body, signal: AbortSignal.any(signals) });
		} catch (cause) {
			if (signal?.aborted) throw cause;
			const message = cause instanceof Error ? cause.message : String(cause);
			return { error: new ReferralError(0, { message: `network error: ${message}` }, { cause }), retryAfter: null };
		}
		const text = await res.text();
		let parsed: Record<string, unknown>;
		try {
			parsed = JSON.parse(text) as Record<string, unknown>;
		} catch {
			parsed = { message: text.slice(0, 500) || `HTTP ${res.status}` };
		}
		if (res.ok && parsed.success === true) return { answer: parsed };
		// An answer that is not the service's envelope (a proxy's page) still has the request's id in its header when the service sent it.
		const requestid = parsed.requestid ?? res.headers.get("request-id") ?? undefined;
		return { error: new ReferralError(res.status, { ...parsed, requestid }), retryAfter: retryAfterMs(res.headers.get("retry-after")) };
	}

	register = (input: Input<"register">, options?: CallOptions) => this.call("register", input, options);
	updateUser = (input: Input<"updateuser">, options?: CallOptions) => this.call("updateuser", input, options);
	applyReferrerCode = (input: Input<"applyreferrercode">, options?: CallOptions) => this.call("applyreferrercode", input, options);
	validateReferrerCode = (input: Input<"validatereferrercode">, options?: CallOptions) => this.call("validatereferrercode", input, options);
	registerConversionEvent = (input: Input<"registerconversionevent">, options?: CallOptions) =>
		this.call("registerconversionevent", input, options);
	reverseConversionEvent = (input: Input<"reverseconversionevent">, options?: CallOptions) =>
		this.call("reverseconversionevent", input, options);
	getUserBalance = (input: Input<"getuserbalance">, options?: CallOptions) => this.call("getuserbalance", input, options);
	getFriendsAndRewards = (input: Input<"getfriendsandrewards">, options?: CallOptions) => this.call("getfriendsandrewards", input, options);
	redeemRewards = (input: Input<"redeemrewards">, options?: CallOptions) => this.call("redeemrewards", input, options);
	changeRewardStatus = (input: Input<"changerewardstatus">, options?: CallOptions) => this.call("changerewardstatus", input, options);
	checkRewardStatus = (input: Input<"checkrewardstatus">, options?: CallOptions) => this.call("checkrewardstatus", input, options);
	invokeOutreach = (input: Input<"invokeoutreach">, options?: CallOptions) => this.call("invokeoutreach", input, options);
	remindFriend = (input: Input<"remindfriend">, options?: CallOptions) => this.call("remindfriend", input, options);
	getCampaignData = (input: Input<"getcampaigndata">, options?: CallOptions) => this.call("getcampaigndata", input, options);
	campaignTerms = (input: Input<"campaignterms">, options?: CallOptions) => this.call("campaignterms", input, options);
	getSharePage = (input: Input<"getsharepage">, options?: CallOptions) => this.call("getsharepage", input, options);
	getLeaderboard = (input: Input<"getleaderboard">, options?: CallOptions) => this.call("getleaderboard", input, options);
}
