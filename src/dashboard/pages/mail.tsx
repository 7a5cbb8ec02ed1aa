/** @jsxImportSource hono/jsx */
import { listDevMail } from "../../db/dev-mail";
import { isLocalDevelopment } from "../../http/admin-token";
import type { Dash } from "../context";
import { dateTime, Page } from "../layout";

/**
 * Local mail (development only): every email the service sent, newest first,
 * as GET /dev/mail gives it, with its links clickable. No session needed, as
 * for a mailbox: a person invited locally reads their invitation here. A
 * deployed Worker answers 404 and keeps no mail.
 */

const URL_PATTERN = /(https?:\/\/[^\s<>"']+)/g;

/** Plain text with its URLs as links. */
const Linked = (props: { text: string }) => (
	<pre class="mail">{props.text.split(URL_PATTERN).map((part, i) => (i % 2 === 1 ? <a href={part}>{part}</a> : part))}</pre>
);

export function registerMail(dash: Dash) {
	dash.get("/mail", async (c) => {
		if (!isLocalDevelopment(c.env)) return c.html(<Page title="Not found" error="No such page." />, 404);
		const mail = await listDevMail(c.env.DB);
		return c.html(
			<Page title="Local mail">
				<p>
					Every email this local service sent, newest first (also as JSON at <a href="/dev/mail">/dev/mail</a>). A deployed Worker has no
					such page.
				</p>
				{mail.length === 0 && <p>No email yet.</p>}
				{mail.map((m) => (
					<article class="mail" aria-label={`${m.subject} to ${m.to}`}>
						<h2>{m.subject}</h2>
						<p>
							To <strong>{m.to}</strong>, {dateTime(m.sentat)}
						</p>
						<Linked text={m.text} />
					</article>
				))}
			</Page>,
		);
	});
}
