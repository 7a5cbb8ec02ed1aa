import { waitFor } from "./wait";

/**
 * The local mailbox of a `wrangler dev` service (GET /dev/mail, issue 32):
 * waits for the newest email to `to` whose subject matches, and answers the
 * first link in its text matching `link`. The only place an invitation's or
 * a reset's link exists besides the person's real mailbox.
 */
export async function linkFromMailbox(base: string, to: string, subject: RegExp, link: RegExp, context = () => ""): Promise<string> {
	return waitFor(
		`an email to ${to} matching ${subject}`,
		async () => {
			const res = await fetch(`${base}/dev/mail`);
			const { mail } = (await res.json()) as { mail: { to: string; subject: string; text: string }[] };
			const email = mail.find((m) => m.to === to && subject.test(m.subject));
			return email ? new RegExp(`${link.source}\\S*`).exec(email.text)?.[0] : undefined;
		},
		{ timeoutMs: 30_000, context },
	);
}

export const INVITATION_LINK = /https?:\/\/\S+\/dashboard\/invitations\/inv_/;
export const RESET_LINK = /https?:\/\/\S+\/dashboard\/reset\/rst_/;
