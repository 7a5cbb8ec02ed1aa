// wrangler.toml's [[rules]] turn this file into a text module.
declare module "*/standalone.js" {
	const text: string;
	export default text;
}
