/// The pushes list and a push's page.
extension ConsoleTemplates {
    static let pushes = #"""
        {{<layout}}{{$content}}
        <div class="actions">
          <div><h1>Pushes</h1><p class="lede">Newest first. Open one to watch it, pause, cancel or recall it.</p></div>
        </div>
        <div class="card">
          <div class="filters" role="navigation" aria-label="Filter by state">
            {{#filters}}<a href="{{value}}"{{#selected}} aria-current="true"{{/selected}}>{{label}}</a>{{/filters}}
            <form class="search" method="get" action="/console/pushes" role="search">
              <label for="push-id" class="skip">Push id</label>
              <input id="push-id" name="id" type="text" placeholder="Find a push by its id" spellcheck="false">
              <button class="secondary" type="submit">Find</button>
            </form>
          </div>
          {{#hasPushes}}
          <table>
            <thead><tr><th>Push</th><th>State</th><th class="hide-narrow">Created (UTC)</th><th class="num">Targeted</th>
              <th class="num hide-narrow">Accepted</th><th class="num hide-narrow">Failed</th><th class="hide-narrow">Progress</th></tr></thead>
            <tbody>
            {{#pushes}}
            <tr>
              <td><a class="mono" href="/console/pushes/{{id}}">{{shortID}}</a>{{#recall}} <span class="muted">recall</span>{{/recall}}</td>
              <td><span class="state {{stateClass}}">{{stateLabel}}</span></td>
              <td class="hide-narrow">{{createdAt}}</td>
              <td class="num">{{targeted}}</td>
              <td class="num hide-narrow">{{accepted}}</td>
              <td class="num hide-narrow">{{failed}}</td>
              <td class="hide-narrow"><svg class="mini bar{{#finished}} done{{/finished}}" role="img" aria-label="{{percent}}% done">
                <rect class="track" width="100%" height="100%" rx="4"/><rect class="fill" width="{{percent}}%" height="100%" rx="4"/></svg></td>
            </tr>
            {{/pushes}}
            </tbody>
          </table>
          {{/hasPushes}}
          {{^hasPushes}}<p class="muted">No pushes{{#stateLabel}} {{stateLabel}}{{/stateLabel}} yet. <a href="/console/compose">Compose one.</a></p>{{/hasPushes}}
          {{#next}}<div class="pager"><a class="button secondary" href="{{next}}">Older pushes →</a></div>{{/next}}
        </div>
        {{/content}}{{/layout}}
        """#

    static let push = #"""
        {{<layout}}{{$content}}
        <p><a href="/console/pushes">← Pushes</a></p>
        <h1>Push <span class="mono">{{push.shortID}}</span> <span id="push-state" class="state {{push.stateClass}}">{{push.stateLabel}}</span></h1>
        <p class="lede mono">{{push.id}}</p>
        <div class="grid">
          <div>
            <div class="card" id="live"{{#push.live}} data-events="/console/pushes/{{push.id}}/events"{{/push.live}}>
              <h2>Progress</h2>
              <svg id="progress-bar" class="bar{{#push.finished}} done{{/push.finished}}" role="img" aria-label="Progress">
                <rect class="track" width="100%" height="100%" rx="7"/><rect id="progress-fill" class="fill" width="{{push.percent}}%" height="100%" rx="7"/></svg>
              <p id="progress-text" aria-live="polite">{{push.done}} of {{push.target}} ({{push.percentWhole}}%)</p>
              <div class="stats">
                <div class="stat"><div class="label">Targeted</div><div class="value" id="count-targeted">{{push.target}}</div></div>
                <div class="stat"><div class="label">Accepted</div><div class="value" id="count-accepted">{{push.accepted}}</div></div>
                <div class="stat"><div class="label">Failed</div><div class="value" id="count-failed">{{push.failed}}</div></div>
                <div class="stat"><div class="label">Canceled</div><div class="value" id="count-canceled">{{push.canceled}}</div></div>
              </div>
              <dl class="facts">
                <dt>Rate</dt><dd id="rate">–</dd>
                <dt>Expected end</dt><dd id="eta">{{#push.eta}}{{push.eta}}{{/push.eta}}{{^push.eta}}–{{/push.eta}}</dd>
              </dl>
            </div>
            <div class="card">
              <h2>Outcomes</h2>
              <svg id="outcomes-chart" class="chart" role="img" aria-label="{{push.outcomeSummary}}">
                <rect class="seg-pending" width="100%" height="100%" rx="6"/>
                {{#push.segments}}<rect id="seg-{{name}}" class="seg-{{name}}" x="{{x}}%" width="{{width}}%" height="100%"/>{{/push.segments}}
              </svg>
              <div class="legend">
                {{#push.segments}}<span><svg aria-hidden="true"><rect class="seg-{{name}}" width="10" height="10" rx="2"/></svg>{{label}} <span id="legend-{{name}}">{{count}}</span></span>{{/push.segments}}
              </div>
              <p class="hint" id="skipped-detail"{{^push.skippedDetail}} hidden{{/push.skippedDetail}}>{{push.skippedDetail}}</p>
              <div id="reasons"{{^push.hasReasons}} hidden{{/push.hasReasons}}>
              <h2 class="reasons-title">Failed, by reason</h2>
              <svg id="reasons-chart" class="reasons" viewBox="0 0 600 {{push.reasonsHeight}}" role="img" aria-label="Rejections by reason">
                {{#push.reasons}}
                <text x="0" y="{{textY}}">{{reason}}</text>
                <rect class="reason-bar" x="200" y="{{barY}}" width="{{barWidth}}" height="14" rx="3"/>
                <text x="{{countX}}" y="{{textY}}">{{count}}</text>
                {{/push.reasons}}
              </svg>
              </div>
            </div>
            {{#push.notification}}
            <div class="card" id="notification">
              <h2>Notification</h2>
              <pre class="payload">{{push.notification}}</pre>
              <p class="hint">What the push said, as it was accepted (a template's copied in).</p>
            </div>
            {{/push.notification}}
            {{#push.engagement}}
            <div class="card" id="engagement" data-refresh="15">
              <h2>Engagement</h2>
              <div class="stats">
                <div class="stat"><div class="label">Reached</div><div class="value" id="engagement-reached">{{reached}}</div></div>
                <div class="stat"><div class="label">Received</div><div class="value" id="engagement-received">{{received}}</div><div class="muted">{{receivedRate}}</div></div>
                <div class="stat"><div class="label">Opened</div><div class="value" id="engagement-opened">{{opened}}</div><div class="muted" id="engagement-open-rate">{{openRate}}</div></div>
                <div class="stat"><div class="label">Dismissed</div><div class="value" id="engagement-dismissed">{{dismissed}}</div></div>
              </div>
              {{#hasActions}}<dl class="facts">{{#actions}}<dt>Action {{label}}</dt><dd>{{value}}</dd>{{/actions}}</dl>{{/hasActions}}
              <p class="hint">What the devices reported (received: the notification service extension ran), each device once per push; the rates are of the devices reached through APNs or online. <a id="report-csv" href="/console/pushes/{{push.id}}/report.csv">Download the report (CSV)</a></p>
            </div>
            {{/push.engagement}}
            {{#push.hasVariants}}
            <div class="card" id="variants" data-refresh="15">
              <h2>Variants</h2>
              {{#push.abPhase}}<p id="ab-phase">{{push.abPhase}}</p>{{/push.abPhase}}
              <table>
                <thead><tr><th>Variant</th><th class="num">Weight</th><th class="num">Targeted</th><th class="num">Reached</th><th class="num hide-narrow">Not reached</th><th class="num">Opened</th><th class="num">Open rate</th></tr></thead>
                <tbody>{{#push.variants}}<tr{{#winner}} class="winner"{{/winner}}><td>{{name}}{{#winner}} <strong>winner</strong>{{/winner}}</td><td class="num">{{weight}}</td><td class="num">{{targeted}}</td><td class="num">{{reached}}</td><td class="num hide-narrow">{{notReached}}</td><td class="num">{{opened}}</td><td class="num">{{openRate}}</td></tr>{{/push.variants}}
                {{#push.holdout}}<tr><td class="muted">Holdout ({{share}})</td><td></td><td class="num">{{devices}}</td><td class="num">0</td><td class="num hide-narrow">{{devices}}</td><td></td><td></td></tr>{{/push.holdout}}</tbody>
              </table>
              <p class="hint">An A/B test: each device gets one variant by a hash of the push and the device; the holdout is targeted and never sent. Reached is accepted by APNs or delivered online; the variants and the holdout add up to the push's counters.</p>
            </div>
            {{/push.hasVariants}}
            {{#push.hasWaves}}
            <div class="card" id="waves">
              <h2>Waves by time zone</h2>
              <table>
                <thead><tr><th>Starts (UTC)</th><th class="num">Devices</th><th>Time zones</th><th></th></tr></thead>
                <tbody>{{#push.waves}}<tr><td>{{at}}</td><td class="num">{{devices}}</td><td class="muted">{{zones}}</td><td>{{#started}}started{{/started}}{{^started}}waiting{{/started}}</td></tr>{{/push.waves}}</tbody>
              </table>
            </div>
            {{/push.hasWaves}}
            {{#failures.show}}
            <div class="card" id="failures">
              <h2>Devices not reached</h2>
              <div class="filters" role="navigation" aria-label="Filter by reason">
                {{#failures.filters}}<a href="{{value}}"{{#selected}} aria-current="true"{{/selected}}>{{label}}</a>{{/failures.filters}}
              </div>
              {{#failures.hasRows}}
              <table>
                <thead><tr><th>Registration id</th><th>Reason</th><th class="hide-narrow">When (UTC)</th></tr></thead>
                <tbody>{{#failures.rows}}<tr><td class="mono">{{registrationID}}</td><td>{{reason}}</td><td class="hide-narrow">{{at}}</td></tr>{{/failures.rows}}</tbody>
              </table>
              {{/failures.hasRows}}
              {{^failures.hasRows}}<p class="muted">None so far.</p>{{/failures.hasRows}}
              {{#failures.next}}<div class="pager"><a class="button secondary" href="{{failures.next}}">More →</a></div>{{/failures.next}}
            </div>
            {{/failures.show}}
          </div>
          <div>
            <div class="card">
              <h2>Actions</h2>
              <div class="actions">
                <form method="post" action="/console/pushes/{{push.id}}/pause" data-action="pause"{{^actions.pause}} hidden{{/actions.pause}}><input type="hidden" name="csrf" value="{{chrome.csrf}}"><input type="hidden" name="confirmed" value="1"><button class="secondary" type="submit">Pause</button></form>
                <form method="post" action="/console/pushes/{{push.id}}/resume" data-action="resume"{{^actions.resume}} hidden{{/actions.resume}}><input type="hidden" name="csrf" value="{{chrome.csrf}}"><input type="hidden" name="confirmed" value="1"><button class="secondary" type="submit">Resume</button></form>
                <form method="post" action="/console/pushes/{{push.id}}/cancel" data-action="cancel"{{^actions.cancel}} hidden{{/actions.cancel}} data-confirm="Cancel this push? Devices not reached yet will not get it."><input type="hidden" name="csrf" value="{{chrome.csrf}}"><input type="hidden" name="confirmed" value=""><button class="danger" type="submit">Cancel</button></form>
                <form method="post" action="/console/pushes/{{push.id}}/recall" data-action="recall"{{^actions.recall}} hidden{{/actions.recall}} data-confirm="Recall this push? It is canceled, and every device that got it is told to remove it."><input type="hidden" name="csrf" value="{{chrome.csrf}}"><input type="hidden" name="confirmed" value=""><button class="danger" type="submit">Recall</button></form>
                {{#actions.correct}}<a class="button secondary" href="/console/compose?replaces={{push.id}}">Send a correction</a>{{/actions.correct}}
              </div>
              <p class="muted" id="no-actions"{{#actions.any}} hidden{{/actions.any}}>Nothing left to do: this push has ended.</p>
            </div>
            <div class="card">
              <h2>Details</h2>
              <dl class="facts">
                <dt>Type</dt><dd>{{push.pushType}}, priority {{push.priority}}</dd>
                <dt>Class</dt><dd>{{push.priorityClass}}</dd>
                {{#push.localTime}}<dt>Local time</dt><dd>{{push.localTime}}</dd>{{/push.localTime}}
                {{#push.holdsQuietHours}}<dt>Quiet hours</dt><dd>held until they end</dd>{{/push.holdsQuietHours}}
                {{#push.collapseID}}<dt>Collapse id</dt><dd class="mono">{{push.collapseID}}</dd>{{/push.collapseID}}
                {{#push.recallOf}}<dt>Recall of</dt><dd><a class="mono" href="/console/pushes/{{push.recallOf}}">{{push.recallOf}}</a></dd>{{/push.recallOf}}
                {{#push.times}}<dt>{{label}}</dt><dd>{{value}}</dd>{{/push.times}}
              </dl>
            </div>
          </div>
        </div>
        {{/content}}{{/layout}}
        """#
}
