import { admin, createApp } from "../support/api";
import { ok } from "./tour-http";

/** A campaign's editable emails (docs/messages.md): saved, read, previewed, sent with, and reset. */
export async function messagesTour(): Promise<void> {
	const { appid, campaignid, api } = await createApp();
	const base = `/apps/${appid}/campaigns/${campaignid}/messages`;
	ok(await admin("PATCH", `/apps/${appid}`, { logourl: "https://cdn.example.com/l.png", accentcolor: "#aa0000" }), "brand app");
	ok(await admin("PUT", `${base}/reminder/en`, { subject: "{{referrername}} again", body: "Hi {{friendname}}" }), "save message");
	ok(await admin("GET", base), "read messages");
	ok(await admin("POST", `${base}/reminder/fr/preview`, { subject: "s", body: "{{sharelink}}" }), "preview message");
	const referrer = (await api("register", { email: "plan-msg-ref@x.com", name: "Rita" })).body;
	const friend = (await api("register", { email: "plan-msg-fr@x.com", referrercode: referrer.referralcode })).body;
	ok(await api("remindfriend", { userkey: referrer.userkey, frienduserkey: friend.userkey, language: "fr" }), "remind with template");
	ok(await admin("DELETE", `${base}/reminder/en`), "reset message");
}
