/// The devices page: look a device up by alias, registration id, token prefix or tag; the app's
/// devices counted by tag and environment.
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
          <table id="found">
            <thead><tr><th>Registration id</th><th>Token</th><th class="hide-narrow">Environment</th><th>Alias</th><th class="hide-narrow">Tags</th><th class="hide-narrow">Attributes</th><th>Status</th><th class="hide-narrow">Updated (UTC)</th></tr></thead>
            <tbody>{{#devices}}<tr><td class="mono">{{registrationID}}</td><td class="mono">{{token}}…</td><td class="hide-narrow">{{environment}}</td><td>{{alias}}</td><td class="hide-narrow">{{tags}}</td><td class="hide-narrow">{{described}}</td>
              <td>{{#invalid}}<span class="state canceled">invalid{{#reason}}: {{reason}}{{/reason}}</span>{{/invalid}}{{^invalid}}<span class="state completed">active</span>{{/invalid}}</td><td class="hide-narrow">{{updatedAt}}</td></tr>{{/devices}}</tbody>
          </table>
          {{/hasDevices}}
          {{^hasDevices}}<p class="muted">No device matches.</p>{{/hasDevices}}
          {{#next}}<div class="pager"><a class="button secondary" href="{{next}}">More →</a></div>{{/next}}
          {{/searched}}
        </div>
        <div class="card">
          <h2 id="tags">Devices by tag</h2>
          <form class="row" method="get" action="/console/devices#tags" role="search">
            <div class="field"><label for="tag_prefix">Tags starting with</label><input id="tag_prefix" name="tag_prefix" type="text" value="{{tagPrefix}}" spellcheck="false" placeholder="any"></div>
            <div class="field"><label>&nbsp;</label><button class="secondary" type="submit">Show</button></div>
          </form>
          {{#hasCounts}}
          <table id="tag-counts">
            <caption class="muted">Counted as devices register, change and go — not recounted on each visit.</caption>
            <thead><tr><th>Tag</th><th class="num">Active</th><th class="num hide-narrow">Production</th><th class="num hide-narrow">Sandbox</th><th class="num">Invalid</th></tr></thead>
            <tbody>{{#counts}}<tr><td>{{#link}}<a href="{{link}}">{{label}}</a>{{/link}}{{^link}}<strong>{{label}}</strong>{{/link}}</td><td class="num">{{active}}</td><td class="num hide-narrow">{{production}}</td><td class="num hide-narrow">{{sandbox}}</td><td class="num">{{invalid}}</td></tr>{{/counts}}</tbody>
          </table>
          {{/hasCounts}}
          {{#noTags}}<p class="muted">No device carries a tag{{#tagPrefix}} starting with “{{tagPrefix}}”{{/tagPrefix}}.</p>{{/noTags}}
          {{#moreTags}}<div class="pager"><a class="button secondary" href="{{moreTags}}#tags">More tags →</a></div>{{/moreTags}}
        </div>
        {{/content}}{{/layout}}
        """#
}
