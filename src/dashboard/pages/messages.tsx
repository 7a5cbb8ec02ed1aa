/** @jsxImportSource hono/jsx */

import { sendsRewardEmail } from "../../domain/messages";
import { shareLinkBase } from "../../domain/public-origin";
import {
	isLang,
	LANGS,
	type Lang,
	MESSAGE_KINDS,
	type MessageKind,
	REWARD_EMAIL_MODES,
	type RewardEmailMode,
} from "../../outbox/templates";
import { must } from "../api";
import { back, type Dash, type DashContext, field } from "../context";
import { formErrors, plainError } from "../form-errors";
import { Csrf, Field, Page, Select, TextArea } from "../layout";
import { mayAct, READ_ONLY_NOTE, roleIn } from "../role";
import { loadApp } from "./apps";

/**
 * A campaign's emails (issue 34, docs/messages.md): pick one kind and
 * language, edit its subject and text, preview it. Without script the
 * Preview button posts the form and the page comes back with the preview;
 * app.js (script.ts) posts the same form on every change and swaps in the
 * preview section it gets back, so the preview is live.
 */

const KIND_NAMES: Record<MessageKind, string> = {
	outreach: "Outreach (to the referrer)",
	reminder: "Reminder (to a friend)",
	reward: "Reward earned (to whoever earned it)",
};
const SENDING: [RewardEmailMode, string][] = [
	["auto", "When the app has an email sender (the default)"],
	["on", "Always"],
	["off", "Never"],
];
const LANG_NAMES: Record<Lang, string> = { en: "English", fr: "French", de: "German", es: "Spanish" };

interface Stored {
	campaignid: number;
	rewardemail: RewardEmailMode;
	messages: Record<
		MessageKind,
		{ variables: Record<string, string>; templates: Record<Lang, { subject: string; body: string; custom: boolean }> }
	>;
}

interface Preview {
	subject: string;
	text: string;
	html: string;
}

interface EditorState {
	kind: MessageKind;
	lang: Lang;
	subject: string;
	body: string;
	custom: boolean;
	preview: Preview | null;
	previewError: string | null;
}

const pathOf = (appid: string, campaignid: string) =>
	`/dashboard/apps/${encodeURIComponent(appid)}/campaigns/${encodeURIComponent(campaignid)}/messages`;

const kindOf = (v: string | undefined): MessageKind => MESSAGE_KINDS.find((k) => k === v) ?? "outreach";
const langOf = (v: string | undefined): Lang => (v && isLang(v) ? v : "en");

/** Whether the campaign sends the reward-earned email (docs/messages.md), with the reward editor. */
/**
 * Whether this app sends the reward email now, and why not (issue 48): "auto", the default, sends nothing for an
 * app without an email sender (docs/messages.md), which the editor says instead of letting a text be polished for
 * an email nobody gets; and, without SHARE_BASE_URL or PUBLIC_ORIGIN, that the email carries no share link (its line is left out).
 */
function SendingState(props: { mode: RewardEmailMode; sender: string | null; appid: string; shareBase: string }) {
	const sends = sendsRewardEmail(props.mode, props.sender);
	const settings = <a href={`/dashboard/apps/${props.appid}#settings`}>the app's settings</a>;
	return (
		<div data-testid="sending-state">
			{sends ? (
				<p>
					This app sends this email when a reward is earned, from <strong>{props.sender?.trim() || "the service's default sender"}</strong>.
				</p>
			) : props.mode === "off" ? (
				<p class="flash error">This app sends no reward email: sending is set to "Never" below.</p>
			) : (
				<p class="flash error">
					This app sends no reward email now: sending is "When the app has an email sender" and the app has none. Set an email sender in{" "}
					{settings}, or choose "Always" below (sent from the service's default sender).
				</p>
			)}
			{sends && !props.shareBase && (
				<p class="hint">
					The service has neither SHARE_BASE_URL nor PUBLIC_ORIGIN, so this email carries no share link: its line is left out, as the
					preview shows.
				</p>
			)}
		</div>
	);
}

function Sending(props: { base: string; csrf: string; manager: boolean; mode: RewardEmailMode }) {
	return (
		<form class="grid" method="post" action={`${props.base}/settings`} aria-labelledby="sending">
			<h2 id="sending">Sending</h2>
			<Csrf token={props.csrf} />
			<Select label="Send the reward-earned email" name="rewardemail" value={props.mode} options={SENDING} />
			{props.manager && (
				<div class="row">
					<button type="submit">Save sending</button>
				</div>
			)}
		</form>
	);
}

function Editor(props: { base: string; csrf: string; manager: boolean; state: EditorState; variables: Record<string, string> }) {
	const { state, base } = props;
	return (
		<>
			<nav aria-label="Email and language" class="pager">
				{MESSAGE_KINDS.map((kind) => (
					<span>
						{KIND_NAMES[kind]}:{" "}
						{LANGS.map((lang) => (
							<>
								<a
									href={`${base}?kind=${kind}&lang=${lang}`}
									aria-current={kind === state.kind && lang === state.lang ? "page" : undefined}
								>
									{LANG_NAMES[lang]}
								</a>{" "}
							</>
						))}
					</span>
				))}
			</nav>
			<h2 id="editing">
				{KIND_NAMES[state.kind]}, {LANG_NAMES[state.lang]}{" "}
				<span class="hint" data-testid="custom">
					({state.custom ? "this campaign's text" : "the default text"})
				</span>
			</h2>
			<form class="grid" method="post" action={base} aria-labelledby="editing" data-live-preview={`${base}/preview`}>
				<Csrf token={props.csrf} />
				<input type="hidden" name="kind" value={state.kind} />
				<input type="hidden" name="language" value={state.lang} />
				<Field label="Subject" name="subject" value={state.subject} required />
				<TextArea label="Text" name="body" value={state.body} rows={12} hint="plain text, never HTML; a blank line starts a paragraph" />
				<div class="row">
					{/* First in the form: Enter in the subject previews, it never saves. */}
					<button type="submit" class="secondary" formaction={`${base}/preview`}>
						Preview
					</button>
					{props.manager && <button type="submit">Save email</button>}
					{props.manager && state.custom && (
						<button type="submit" class="danger" formaction={`${base}/reset`}>
							Back to the default text
						</button>
					)}
				</div>
				{!props.manager && <p class="muted">{READ_ONLY_NOTE}</p>}
			</form>
			<h2 id="variables">Variables</h2>
			<dl class="props">
				{Object.entries(props.variables).map(([name, meaning]) => (
					<>
						<dt>
							<code>{`{{${name}}}`}</code>
						</dt>
						<dd>{meaning}</dd>
					</>
				))}
			</dl>
			<section id="preview" aria-labelledby="preview-title" aria-live="polite">
				<h2 id="preview-title">Preview</h2>
				{state.previewError && (
					<p class="flash error" role="alert" data-testid="preview-error">
						{state.previewError}
					</p>
				)}
				{state.preview && (
					<>
						<p class="muted">With a sample recipient (Ann, Bob), this campaign's offer and the app's logo and colour.</p>
						<dl class="props">
							<dt>Subject</dt>
							<dd data-testid="preview-subject">{state.preview.subject}</dd>
						</dl>
						<iframe
							title="Email preview, HTML part"
							sandbox=""
							srcdoc={state.preview.html}
							style="width:100%;max-width:760px;height:360px;border:1px solid #d0d7de;border-radius:8px;background:#fff"
						/>
						<h3>Text part</h3>
						<pre data-testid="preview-text" style="white-space:pre-wrap;max-width:760px">
							{state.preview.text}
						</pre>
					</>
				)}
			</section>
		</>
	);
}

async function render(
	c: DashContext,
	state: Omit<EditorState, "custom" | "preview" | "previewError"> & Partial<EditorState>,
	messages: { ok?: string | null; error?: string | null },
	status: 200 | 400 = 200,
) {
	const appid = c.req.param("appid") ?? "";
	const campaignid = c.req.param("campaignid") ?? "";
	const api = `/apps/${encodeURIComponent(appid)}/campaigns/${encodeURIComponent(campaignid)}/messages`;
	const [app, stored, role] = await Promise.all([loadApp(c, appid), c.var.api<Stored>("GET", api), roleIn(c, appid)]);
	const current = must(stored).messages[state.kind];
	let preview = state.preview ?? null;
	let previewError = state.previewError ?? null;
	if (!preview && !previewError) {
		const res = await c.var.api<Preview>("POST", `${api}/${state.kind}/${state.lang}/preview`, {
			subject: state.subject,
			body: state.body,
		});
		if (res.ok) preview = res.body;
		else previewError = res.error;
	}
	const full: EditorState = { ...state, custom: current.templates[state.lang].custom, preview, previewError };
	const base = pathOf(appid, campaignid);
	return c.html(
		<Page title="Campaign emails" appid={appid} appname={app.name} tab="campaigns" csrf={c.var.session.csrf} {...messages}>
			<p>
				campaignid <code>{campaignid}</code> · <a href={`/dashboard/apps/${appid}/campaigns/${campaignid}`}>Back to the campaign</a> · the
				app's logo and accent colour are in its <a href={`/dashboard/apps/${appid}#settings`}>settings</a>
			</p>
			<Editor base={base} csrf={c.var.session.csrf} manager={mayAct(role, "manager")} state={full} variables={current.variables} />
			{state.kind === "reward" && (
				<>
					<SendingState mode={must(stored).rewardemail} sender={app.emailsender} appid={appid} shareBase={shareLinkBase(c.env)} />
					<Sending base={base} csrf={c.var.session.csrf} manager={mayAct(role, "manager")} mode={must(stored).rewardemail} />
				</>
			)}
		</Page>,
		status,
	);
}

/** The kind, language and text a form posted. */
async function typed(c: DashContext) {
	const form = await c.req.parseBody();
	return {
		kind: kindOf(field(form, "kind")),
		lang: langOf(field(form, "language")),
		subject: field(form, "subject"),
		body: field(form, "body"),
	};
}

const apiPath = (c: DashContext, kind: MessageKind, lang: Lang) =>
	`/apps/${encodeURIComponent(c.req.param("appid") ?? "")}/campaigns/${encodeURIComponent(c.req.param("campaignid") ?? "")}/messages/${kind}/${lang}`;

export function registerMessages(dash: Dash) {
	dash.get("/apps/:appid/campaigns/:campaignid/messages", async (c) => {
		const kind = kindOf(c.req.query("kind"));
		const lang = langOf(c.req.query("lang"));
		const stored = must(
			await c.var.api<Stored>(
				"GET",
				`/apps/${encodeURIComponent(c.req.param("appid"))}/campaigns/${encodeURIComponent(c.req.param("campaignid"))}/messages`,
			),
		);
		const { subject, body } = stored.messages[kind].templates[lang];
		return render(c, { kind, lang, subject, body }, { ok: c.req.query("ok") ?? null, error: c.req.query("error") ?? null });
	});

	/** The preview of what was typed (nothing saved): the page without script, the preview section for app.js. */
	dash.post("/apps/:appid/campaigns/:campaignid/messages/preview", async (c) => {
		const state = await typed(c);
		const res = await c.var.api<Preview>("POST", `${apiPath(c, state.kind, state.lang)}/preview`, {
			subject: state.subject,
			body: state.body,
		});
		return render(
			c,
			{ ...state, preview: res.ok ? res.body : null, previewError: res.ok ? null : plainError(res.error) },
			{},
			res.ok ? 200 : 400,
		);
	});

	dash.post("/apps/:appid/campaigns/:campaignid/messages", async (c) => {
		const state = await typed(c);
		const res = await c.var.api("PUT", apiPath(c, state.kind, state.lang), { subject: state.subject, body: state.body });
		const here = `${pathOf(c.req.param("appid"), c.req.param("campaignid"))}?kind=${state.kind}&lang=${state.lang}`;
		if (res.ok) return back(c, here, { ok: "Email saved: the next one sent uses it." });
		// Shown again as typed, with the reason in the operator's words (issue 48): nothing was saved.
		const refused = formErrors(res, { subject: "Subject", body: "Body" }, "The email was not saved");
		return render(c, { ...state, previewError: plainError(res.error) }, { error: refused.summary }, 400);
	});

	dash.post("/apps/:appid/campaigns/:campaignid/messages/settings", async (c) => {
		const form = await c.req.parseBody();
		const mode = REWARD_EMAIL_MODES.find((m) => m === field(form, "rewardemail")) ?? "auto";
		const api = `/apps/${encodeURIComponent(c.req.param("appid"))}/campaigns/${encodeURIComponent(c.req.param("campaignid"))}/rewardemail`;
		const res = await c.var.api("PUT", api, { rewardemail: mode });
		const here = `${pathOf(c.req.param("appid"), c.req.param("campaignid"))}?kind=reward`;
		return back(c, here, res.ok ? { ok: "Saved: it applies to the next reward earned." } : { error: res.error });
	});

	dash.post("/apps/:appid/campaigns/:campaignid/messages/reset", async (c) => {
		const state = await typed(c);
		const res = await c.var.api("DELETE", apiPath(c, state.kind, state.lang));
		const here = `${pathOf(c.req.param("appid"), c.req.param("campaignid"))}?kind=${state.kind}&lang=${state.lang}`;
		return back(c, here, res.ok ? { ok: "Back to the default text." } : { error: res.error });
	});
}
