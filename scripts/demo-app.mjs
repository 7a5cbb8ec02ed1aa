// The demo app and campaign `npm start` creates (scripts/start.mjs), shared
// with the test that runs the README's examples against them
// (test/e2e/readme.e2e.test.ts), so the README is checked against what a
// newcomer really gets.
export const DEMO_APP = { name: "Demo shop", landingurl: "https://example.com/join" };

export const DEMO_CAMPAIGN = {
	campaignname: "Give $10, get $10",
	offertitle: "Give $10, get $10",
	offerdescription: "Invite a friend: you both get $10 in store credit when they sign up.",
	terms: "Credits are issued when your friend signs up & expire after 12 months.",
	rewardtype: 3,
	rewardrules: [
		{ rewardusertype: "Referrer", eventname: "Signup", reward: 10, rewardunit: "USD" },
		{ rewardusertype: "Friend", eventname: "Signup", reward: 10, rewardunit: "USD" },
		{ rewardusertype: "Referrer", eventname: "Transaction", reward: 5, rewardunit: "%", maxrewardamount: 50, mintranvalue: 20 },
	],
	socialactions: [
		{ socialactionid: "5", socialactionname: "Mail", sharemessage: "Join me and get $10: SHARE_URL (code SHARE_CODE)", displayorder: 1 },
		{ socialactionid: "14", socialactionname: "CustomLink", sharemessage: "SHARE_URL", displayorder: 2 },
	],
};
