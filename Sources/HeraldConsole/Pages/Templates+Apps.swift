/// The admin's pages: apps, an app's keys and APNs credentials, and secrets shown once.
extension ConsoleTemplates {
    static let apps = #"""
        {{<layout}}{{$content}}
        <h1>Apps</h1>
        <p class="lede">Each app has its own devices, pushes, keys and APNs credentials.</p>
        <div class="grid">
          <div class="card">
            {{#hasApps}}
            <table>
              <thead><tr><th>App</th><th class="hide-narrow">Bundle id</th><th class="hide-narrow">Created (UTC)</th></tr></thead>
              <tbody>{{#apps}}<tr><td><a href="/console/apps/{{id}}">{{name}}</a></td><td class="mono hide-narrow">{{bundleID}}</td><td class="hide-narrow">{{createdAt}}</td></tr>{{/apps}}</tbody>
            </table>
            {{/hasApps}}
            {{^hasApps}}<p class="muted">No apps yet: create the first one.</p>{{/hasApps}}
            {{#next}}<div class="pager"><a class="button secondary" href="{{next}}">More →</a></div>{{/next}}
          </div>
          <div class="card">
            <h2>Create an app</h2>
            <form method="post" action="/console/apps">
              <input type="hidden" name="csrf" value="{{chrome.csrf}}">
              <div class="field"><label for="name">Name</label><input id="name" name="name" type="text" required maxlength="200"></div>
              <div class="field"><label for="bundle_id">Bundle id (the APNs topic)</label>
                <input id="bundle_id" name="bundle_id" type="text" required maxlength="255" placeholder="com.example.app" spellcheck="false"></div>
              <button class="primary" type="submit">Create app</button>
              <div class="hint">Its first server key, client key and identity secret are shown once, on the next page.</div>
            </form>
          </div>
        </div>
        {{/content}}{{/layout}}
        """#

    static let app = #"""
        {{<layout}}{{$content}}
        {{#chrome.globalAdmin}}<p><a href="/console/apps">← Apps</a></p>{{/chrome.globalAdmin}}
        <h1>{{app.name}}</h1>
        <p class="lede"><span class="mono">{{app.bundleID}}</span> · app id <span class="mono">{{app.id}}</span></p>
        {{#legacyMode}}<div class="alert" role="alert" id="legacy-mode">{{legacyMode}}</div>{{/legacyMode}}
        <div class="card">
          <h2>APNs credentials</h2>
          <table>
            <thead><tr><th>Environment</th><th>Kind</th><th class="hide-narrow">Key id / team</th><th>Certificate expires</th><th class="hide-narrow">Updated (UTC)</th></tr></thead>
            <tbody>
            {{#credentials}}
            <tr><td>{{environment}}</td><td>{{kind}}</td><td class="mono hide-narrow">{{identity}}</td>
              <td>{{#expires}}{{expires}}{{#expiring}} <span class="state paused">expires within 30 days</span>{{/expiring}}{{#expired}} <span class="state paused">expired</span>{{/expired}}{{/expires}}{{^expires}}–{{/expires}}</td>
              <td class="hide-narrow">{{updatedAt}}</td></tr>
            {{/credentials}}
            {{^hasCredentials}}<tr><td colspan="5" class="muted">None yet: pushes to this app's devices are rejected until one is uploaded.</td></tr>{{/hasCredentials}}
            </tbody>
          </table>
          <h2 class="section-gap">Upload a credential</h2>
          <form method="post" action="/console/apps/{{app.id}}/credentials" enctype="multipart/form-data">
            <input type="hidden" name="csrf" value="{{chrome.csrf}}">
            <div class="row">
              <div class="field"><label for="environment">Environment</label>
                <select id="environment" name="environment"><option value="production">Production</option><option value="sandbox">Sandbox</option></select></div>
              <div class="field"><label for="kind">Kind</label>
                <select id="kind" name="kind"><option value="token">Signing key (.p8)</option><option value="certificate">Certificate (.p12 or PEM)</option></select></div>
            </div>
            <div class="row">
              <div class="field"><label for="file">File (.p8, .p12 or .pem)</label><input id="file" name="file" type="file" accept=".p8,.p12,.pfx,.pem"></div>
              <div class="field"><label for="key_id">Key id (.p8)</label><input id="key_id" name="key_id" type="text" maxlength="10" spellcheck="false"></div>
              <div class="field"><label for="team_id">Team id (.p8)</label><input id="team_id" name="team_id" type="text" maxlength="10" spellcheck="false"></div>
              <div class="field"><label for="passphrase">Passphrase (.p12)</label><input id="passphrase" name="passphrase" type="password" autocomplete="off"></div>
            </div>
            <button class="primary" type="submit">Upload</button>
            <div class="hint">The private key is sealed under the master key before it is stored, and never shown again.</div>
          </form>
        </div>
        <div class="card">
          <h2>Keys</h2>
          <table>
            <thead><tr><th>Key</th><th>Kind</th><th class="hide-narrow">Name</th><th class="hide-narrow">Last used (UTC)</th><th>State</th><th></th></tr></thead>
            <tbody>
            {{#keys}}
            <tr><td class="mono">{{prefix}}…</td><td>{{kind}}{{#scopes}} <span class="muted">({{scopes}})</span>{{/scopes}}</td><td class="hide-narrow">{{name}}</td><td class="hide-narrow">{{lastUsed}}</td>
              <td>{{#revoked}}<span class="state canceled">{{revoked}}</span>{{/revoked}}{{^revoked}}<span class="state completed">active</span>{{/revoked}}</td>
              <td>{{^revoked}}<div class="actions">
                <form method="post" action="/console/apps/{{appID}}/keys/{{id}}/rotate" data-confirm="Rotate this key? The new key is shown once; the old one keeps working for a day."><input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="confirmed" value=""><button class="secondary" type="submit">Rotate</button></form>
                <form method="post" action="/console/apps/{{appID}}/keys/{{id}}/revoke" data-confirm="Revoke this key now? Everything using it stops working at once."><input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="confirmed" value=""><button class="danger" type="submit">Revoke</button></form>
              </div>{{/revoked}}</td></tr>
            {{/keys}}
            </tbody>
          </table>
          <h2 class="section-gap">Create a key</h2>
          <form method="post" action="/console/apps/{{app.id}}/keys" class="row">
            <input type="hidden" name="csrf" value="{{chrome.csrf}}">
            <div class="field"><label for="key_kind">Kind</label>
              <select id="key_kind" name="kind"><option value="server">Server (your back-end, the console)</option><option value="client">Client (inside the app)</option><option value="admin">Admin (this app's settings)</option></select></div>
            <div class="field"><label for="key_name">Name</label><input id="key_name" name="name" type="text" maxlength="200" placeholder="marketing tool"></div>
            <div class="field"><label>&nbsp;</label><button class="primary" type="submit">Create key</button></div>
          </form>
        </div>
        {{/content}}{{/layout}}
        """#

    static let secrets = #"""
        {{<layout}}{{$content}}
        <h1>{{heading}}</h1>
        <div class="alert" role="alert">Copy {{#plural}}these{{/plural}}{{^plural}}this{{/plural}} now: Herald keeps only a hash and will never show {{#plural}}them{{/plural}}{{^plural}}it{{/plural}} again.</div>
        <div class="card">
          <dl class="facts">
            {{#secrets}}<dt>{{label}}</dt><dd><input class="mono secret" type="text" readonly value="{{value}}" aria-label="{{label}}" id="secret-{{id}}"></dd>{{/secrets}}
          </dl>
          <p><a class="button secondary" href="{{back}}">I have copied {{#plural}}them{{/plural}}{{^plural}}it{{/plural}}</a></p>
        </div>
        {{/content}}{{/layout}}
        """#
}
