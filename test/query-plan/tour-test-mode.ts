import { admin, client, createApp, request } from "../support/api";
import { ok } from "./tour-http";

/** Test mode's statements (docs/test-mode.md): a twin's users made with the test keys, read with ?mode=test, then erased. */
export async function testModeTour(): Promise<void> {
	const app = await createApp();
	const { testapikey, testprivatekey } = app as unknown as { testapikey: string; testprivatekey: string };
	const test = client({ apikey: testapikey, privatekey: testprivatekey });
	const referrer = (await test("register", { email: "plan-test-ref@x.com" })).body;
	const friend = (await test("register", { email: "plan-test-friend@x.com", referrercode: referrer.referralcode })).body;
	await test("registerconversionevent", {
		userkey: friend.userkey,
		eventname: "Purchase",
		customid: "plan-t1",
		growthhack: "SaaS_Referrals",
	});
	await request(`/r/${referrer.referralcode}`, { redirect: "manual" });
	ok(await admin("GET", `/apps/${app.appid}/users?mode=test`), "test users");
	ok(await admin("GET", `/apps/${app.appid}/stats?mode=test`), "test stats");
	ok(await admin("DELETE", `/apps/${app.appid}/testdata`), "erase test data");
}
