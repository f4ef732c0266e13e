/// The page every signed-in page fills in (Mustache template inheritance: a page names
/// `{{<layout}}` and fills its `{{$content}}` block).
extension ConsoleTemplates {
    static let logo = #"""
        <svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path fill="#6d8cff" d="M12 2a7 7 0 0 0-7 7v4.2L3.3 16.6A1 1 0 0 0 4.2 18h15.6a1 1 0 0 0 .9-1.4L19 13.2V9a7 7 0 0 0-7-7Z"/><path fill="#f0b429" d="M9.5 19.5a2.5 2.5 0 0 0 5 0Z"/></svg>
        """#

    static let layout = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>{{chrome.title}} · Herald</title>
        <link rel="icon" href="data:,">
        <link rel="stylesheet" href="/console/assets/console.css">
        <script src="/console/assets/console.js" defer></script>
        </head>
        <body>
        <a class="skip" href="#content">Skip to content</a>
        <header class="top"><div class="inner">
          <a class="brand" href="/console">{{> logo}} Herald</a>
          <nav class="main" aria-label="Console">
            {{#chrome.sendsPushes}}
            <a href="/console/pushes"{{#chrome.onPushes}} aria-current="page"{{/chrome.onPushes}}>Pushes</a>
            <a href="/console/compose"{{#chrome.onCompose}} aria-current="page"{{/chrome.onCompose}}>Compose</a>
            <a href="/console/schedules"{{#chrome.onSchedules}} aria-current="page"{{/chrome.onSchedules}}>Schedules</a>
            <a href="/console/devices"{{#chrome.onDevices}} aria-current="page"{{/chrome.onDevices}}>Devices</a>
            <a href="/console/stats"{{#chrome.onStats}} aria-current="page"{{/chrome.onStats}}>Statistics</a>
            {{/chrome.sendsPushes}}
            {{#chrome.managesApps}}
            <a href="/console/apps"{{#chrome.onApps}} aria-current="page"{{/chrome.onApps}}>{{#chrome.globalAdmin}}Apps{{/chrome.globalAdmin}}{{^chrome.globalAdmin}}App settings{{/chrome.globalAdmin}}</a>
            {{/chrome.managesApps}}
          </nav>
          <div class="who">
            <span>{{#chrome.appName}}<strong>{{chrome.appName}}</strong> · {{/chrome.appName}}{{chrome.signedInAs}}</span>
            <form method="post" action="/console/sign-out">
              <input type="hidden" name="csrf" value="{{chrome.csrf}}">
              <button type="submit">Sign out</button>
            </form>
          </div>
        </div></header>
        <main id="content">
        {{#chrome.notice}}<div class="notice" role="status">{{chrome.notice}}</div>{{/chrome.notice}}
        {{#chrome.error}}<div class="alert" role="alert">{{chrome.error}}</div>{{/chrome.error}}
        {{$content}}{{/content}}
        </main>
        </body>
        </html>
        """#

    static let signIn = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Sign in · Herald</title>
        <link rel="icon" href="data:,">
        <link rel="stylesheet" href="/console/assets/console.css">
        </head>
        <body>
        <main id="content" class="signin">
          <div class="brand-large">{{> logo}} Herald</div>
          <div class="card">
            <h1>Sign in to the console</h1>
            <p class="lede">With a server key of your app (<span class="mono">hs_…</span>) to run campaigns, or with
            the admin token.</p>
            {{#error}}<div class="alert" role="alert">{{error}}</div>{{/error}}
            {{#notice}}<div class="notice" role="status">{{notice}}</div>{{/notice}}
            <form method="post" action="/console/sign-in">
              <input type="hidden" name="csrf" value="{{csrf}}">
              <div class="field">
                <label for="key">Key</label>
                <input id="key" name="key" type="password" autocomplete="current-password" required autofocus
                  spellcheck="false">
                <div class="hint">The key is checked and forgotten: the console keeps a session, never the key.</div>
              </div>
              <button class="primary" type="submit">Sign in</button>
            </form>
          </div>
        </main>
        </body>
        </html>
        """#

    static let message = #"""
        {{<layout}}{{$content}}
        <div class="card">
          <h1>{{heading}}</h1>
          <p>{{text}}</p>
          {{#link}}<p><a class="button secondary" href="{{link.href}}">{{link.label}}</a></p>{{/link}}
        </div>
        {{/content}}{{/layout}}
        """#

    static let confirm = #"""
        {{<layout}}{{$content}}
        <div class="card">
          <h1>{{heading}}</h1>
          <p>{{text}}</p>
          <div class="actions">
            <form method="post" action="{{action}}">
              <input type="hidden" name="csrf" value="{{chrome.csrf}}">
              <input type="hidden" name="confirmed" value="1">
              <button class="danger" type="submit">{{button}}</button>
            </form>
            <a class="button secondary" href="{{back}}">Keep it</a>
          </div>
        </div>
        {{/content}}{{/layout}}
        """#
}
