/** @jsxImportSource hono/jsx */
import type { AppInfo } from "../context";
import { Csrf } from "../layout";

/** An app's keys on the page: the one-time page of new secrets, and the test pair with its rotation (docs/test-mode.md). */

type SecretProps = {
	title: string;
	appid: string;
	apikey?: string;
	privatekey?: string;
	webhooksecret?: string;
	testapikey?: string;
	testprivatekey?: string;
};

export function Secrets(props: SecretProps) {
	const hasPrivate = !!(props.privatekey || props.testprivatekey);
	return (
		<section aria-labelledby="secrets">
			<h2 id="secrets">{props.title}</h2>
			{hasPrivate && <p>Copy the private keys now: each is shown only this once and is stored only as a hash.</p>}
			<dl class="props">
				<dt>appid</dt>
				<dd class="mono">{props.appid}</dd>
				{props.apikey && <dt>apikey</dt>}
				{props.apikey && <dd class="mono">{props.apikey}</dd>}
				{props.privatekey && <dt>privatekey</dt>}
				{props.privatekey && (
					<dd class="secret" data-testid="privatekey">
						{props.privatekey}
					</dd>
				)}
				{props.webhooksecret && <dt>webhook secret</dt>}
				{props.webhooksecret && <dd class="secret">{props.webhooksecret}</dd>}
				{props.testapikey && <dt>test apikey</dt>}
				{props.testapikey && (
					<dd class="mono" data-testid="testapikey">
						{props.testapikey}
					</dd>
				)}
				{props.testprivatekey && <dt>test privatekey</dt>}
				{props.testprivatekey && (
					<dd class="secret" data-testid="testprivatekey">
						{props.testprivatekey}
					</dd>
				)}
			</dl>
			{props.testapikey && (
				<p class="hint">
					The test keys make test data only (docs/test-mode.md): use them in development and CI, and turn on "Test data" to see what they
					made.
				</p>
			)}
			<p>
				<a href={`/dashboard/apps/${props.appid}`}>Continue to the app</a>
			</p>
		</section>
	);
}

/** What rotating the test keys breaks, said before the button is pressed (issue 48). */
const TEST_ROTATION_WARNING =
	"New test keys replace the old pair at once: every test integration, CI job or staging site using the old test apikey and test private key stops working until it gets the new ones. Live keys, live data and test data are untouched.";

/** The test pair on the app's page: the apikey, and the rotation (owners), which shows the new pair once. */
export function TestKeys({ app, csrf, owner }: { app: AppInfo; csrf: string; owner: boolean }) {
	return (
		<section aria-labelledby="test-keys">
			<h2 id="test-keys">Test keys</h2>
			<dl class="props">
				<dt>test apikey</dt>
				<dd class="mono" data-testid="app-testapikey">
					{app.testapikey ?? "none yet"}
				</dd>
				<dt>test privatekey</dt>
				<dd>Shown only at creation or rotation.</dd>
			</dl>
			{owner && (
				<form method="post" action={`/dashboard/apps/${app.appid}/rotate-testkeys`} data-confirm={`${TEST_ROTATION_WARNING} Continue?`}>
					<Csrf token={csrf} />
					<p class="hint" id="h-rotate-testkeys">
						{app.testapikey ? TEST_ROTATION_WARNING : "Makes the app's test key pair, shown once."}
					</p>
					<button type="submit" class="secondary" aria-describedby="h-rotate-testkeys">
						{app.testapikey ? "Rotate test keys" : "Create test keys"}
					</button>
				</form>
			)}
		</section>
	);
}
