/**
 * The form a browser without a session gets at /dashboard: one field for an admin token of the
 * policy. `message` is one of the server's own sentences, never what was typed.
 */
export function loginPage(message?: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>sluice dashboard: sign in</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/dashboard/app.css">
</head>
<body>
<main class="login">
<h1>sluice dashboard</h1>
<form method="post" action="/dashboard/login">
<label for="token">Admin token of the policy</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<button type="submit">Sign in</button>
${message === undefined ? '' : `<p class="error" role="alert">${message}</p>`}
</form>
</main>
</body>
</html>
`;
}
