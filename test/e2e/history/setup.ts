import type { FakeStripe } from "../fake-stripe";
import type { Plan } from "./generator";
import { type Answer, admin, type Live, request } from "./service";
import type { SeedApp } from "./world";

/**
 * A seed's app (history checker, docs/stripe.md): a Stripe campaign (10 % of a payment to the referrer, paid into
 * Stripe) and a wallet campaign (5 USD per Purchase), shared by its two sides (test mode reads the live app's
 * campaigns); the live side connected to one local Stripe with a live key, the test twin to another with a test
 * key (issue 47); each side's referrers and friends registered with its own keys. The test side's users are the
 * first of the live side's, with the same emails and the same Stripe customer ids: an event or payout crossing
 * sides would land on a user there, and the checks would see it.
 */

export const SECRETS = { live: "whsec_historyCheckerSigningSecret0123", test: "whsec_historyCheckerTestSecret456789" } as const;
export const STRIPE_KEYS = { live: "sk_live_history4242", test: "sk_test_history4242" } as const;

export interface Sides {
	live: SeedApp;
	test: SeedApp;
}

export async function setUp(live: Live, plans: { live: Plan; test: Plan }, fakes: { live: FakeStripe; test: FakeStripe }, tag: string) {
	const seed = plans.live.seed;
	const must = (what: string, a: Answer) => {
		if (a.status < 200 || a.status >= 300) throw new Error(`seed ${seed} set-up: ${what} answered ${a.status} ${JSON.stringify(a.body)}`);
		return a.body ?? {};
	};
	// Both sides' webhooks go to the app's one webhook URL (docs/test-mode.md), told apart by `livemode`.
	const app = must("app", await admin(live, "POST", "/apps", { name: `history ${tag}`, webhookurl: `${fakes.live.url}/hooks` }));
	const appid: string = app.appid;
	must(
		"Stripe campaign",
		await admin(live, "POST", `/apps/${appid}/campaigns`, {
			campaignname: "10% of a payment, into Stripe",
			distribution: "Stripe",
			currency: "USD",
			velocitythreshold: 0,
			rewardtype: 1,
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Transaction", reward: 10, rewardunit: "%" }],
		}),
	);
	const wallet = must(
		"wallet campaign",
		await admin(live, "POST", `/apps/${appid}/campaigns`, {
			campaignname: "5 USD a purchase",
			velocitythreshold: 0,
			rewardtype: 1,
			rewardrules: [{ rewardusertype: "Referrer", eventname: "Purchase", reward: 5, rewardunit: "USD" }],
		}),
	).campaignid;
	must(
		"Stripe connections",
		await admin(live, "PATCH", `/apps/${appid}`, {
			stripe: { secretkey: STRIPE_KEYS.live, webhooksecret: SECRETS.live, apiurl: fakes.live.url },
			teststripe: { secretkey: STRIPE_KEYS.test, webhooksecret: SECRETS.test, apiurl: fakes.test.url },
		}),
	);
	const users = async (side: "live" | "test", creds: SeedApp["creds"], plan: Plan): Promise<SeedApp> => {
		const api = (op: string, body: object) => request(live, "POST", `/saas/v1_0/${op}`, { ...creds, ...body });
		const referrers: SeedApp["referrers"] = [];
		for (let i = 0; i < plan.referrers; i++) {
			const customer = `cus_${tag}_r${i}`;
			const r = must(`${side} referrer`, await api("register", { email: `r${i}.${tag}@example.com`, paymentcustomerid: customer }));
			referrers.push({ userkey: r.userkey, customer, code: r.referralcode });
		}
		const friends: SeedApp["friends"] = [];
		for (let i = 0; i < plan.friends; i += 8) {
			const batch = [...Array(Math.min(8, plan.friends - i)).keys()].map(async (k) => {
				const f = i + k;
				const customer = `cus_${tag}_f${f}`;
				const referrer = referrers[f % plan.referrers]!;
				const body = must(
					`${side} friend`,
					await api("register", { email: `f${f}.${tag}@example.net`, paymentcustomerid: customer, referrercode: referrer.code }),
				);
				friends[f] = { userkey: body.userkey, customer };
			});
			await Promise.all(batch);
		}
		return { side, appid, creds, wallet, referrers, friends };
	};
	const [liveSide, testSide] = await Promise.all([
		users("live", { apikey: app.apikey, privatekey: app.privatekey }, plans.live),
		users("test", { apikey: app.testapikey, privatekey: app.testprivatekey }, plans.test),
	]);
	return { live: liveSide, test: testSide } satisfies Sides;
}
