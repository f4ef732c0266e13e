/// The devices page: look a device up by alias, registration id, token prefix or tag.
extension ConsoleTemplates {
    static let devices = #"""
        {{<layout}}{{$content}}
        <h1>Devices</h1>
        <p class="lede">Look a device up by its user's alias, its registration id, the start of its token, or a tag.</p>
        <div class="card">
          <form class="row" method="get" action="/console/devices" role="search">
            <div class="field"><label for="by">Look up by</label>
              <select id="by" name="by">{{#lookups}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/lookups}}</select></div>
            <div class="field"><label for="q">Value</label><input id="q" name="q" type="text" value="{{query}}" spellcheck="false" placeholder="user-42, 1234, a1b2c3…, vip"></div>
            <div class="field"><label>&nbsp;</label><button class="primary" type="submit">Look up</button></div>
          </form>
          {{#searched}}
          {{#hasDevices}}
          <table>
            <thead><tr><th>Registration id</th><th>Token</th><th class="hide-narrow">Environment</th><th>Alias</th><th class="hide-narrow">Tags</th><th>Status</th><th class="hide-narrow">Updated (UTC)</th></tr></thead>
            <tbody>{{#devices}}<tr><td class="mono">{{registrationID}}</td><td class="mono">{{token}}…</td><td class="hide-narrow">{{environment}}</td><td>{{alias}}</td><td class="hide-narrow">{{tags}}</td>
              <td>{{#invalid}}<span class="state canceled">invalid{{#reason}}: {{reason}}{{/reason}}</span>{{/invalid}}{{^invalid}}<span class="state completed">active</span>{{/invalid}}</td><td class="hide-narrow">{{updatedAt}}</td></tr>{{/devices}}</tbody>
          </table>
          {{/hasDevices}}
          {{^hasDevices}}<p class="muted">No device matches.</p>{{/hasDevices}}
          {{#next}}<div class="pager"><a class="button secondary" href="{{next}}">More →</a></div>{{/next}}
          {{/searched}}
        </div>
        {{/content}}{{/layout}}
        """#
}
