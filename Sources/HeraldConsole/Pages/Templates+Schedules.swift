/// The schedules list and a schedule's page.
extension ConsoleTemplates {
    static let schedules = #"""
        {{<layout}}{{$content}}
        <div class="actions">
          <div><h1>Schedules</h1><p class="lede">Recurring pushes: each occurrence becomes a push of its own. Create and change them with <code>herald schedules</code> or <code>/v1/schedules</code>.</p></div>
        </div>
        <div class="card">
          {{#hasSchedules}}
          <table>
            <thead><tr><th>Name</th><th>State</th><th>When</th><th class="hide-narrow">Next (UTC)</th><th class="num">Pushes</th><th class="num hide-narrow">Skipped</th></tr></thead>
            <tbody>
            {{#schedules}}
            <tr>
              <td><a href="/console/schedules/{{id}}">{{name}}</a></td>
              <td><span class="state {{stateClass}}">{{state}}</span></td>
              <td>{{when}}</td>
              <td class="hide-narrow">{{next}}</td>
              <td class="num">{{pushesCreated}}</td>
              <td class="num hide-narrow">{{skipped}}</td>
            </tr>
            {{/schedules}}
            </tbody>
          </table>
          {{/hasSchedules}}
          {{^hasSchedules}}<p class="muted">No schedules yet. <code>herald schedules create --name "Morning briefing" --rrule "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR" --time-zone Europe/Berlin --starts-at 2026-12-01T08:00 --tag news --body "Your briefing"</code></p>{{/hasSchedules}}
        </div>
        {{/content}}{{/layout}}
        """#

    static let schedule = #"""
        {{<layout}}{{$content}}
        <p><a href="/console/schedules">← Schedules</a></p>
        <h1>{{schedule.name}} <span class="state {{schedule.stateClass}}">{{schedule.state}}</span></h1>
        <p class="lede mono">{{schedule.id}}</p>
        <div class="grid">
          <div>
            <div class="card">
              <h2>When</h2>
              <dl class="facts">
                <dt>Rule</dt><dd class="mono">{{schedule.rrule}}</dd>
                <dt>Sends</dt><dd>{{schedule.when}}</dd>
                <dt>First</dt><dd>{{schedule.startsAt}}</dd>
                <dt>Late window</dt><dd>{{schedule.lateWindow}}</dd>
              </dl>
              <h2>Next occurrences (UTC)</h2>
              {{#schedule.hasNext}}<ul class="plain">{{#schedule.nextOccurrences}}<li>{{.}}</li>{{/schedule.nextOccurrences}}</ul>{{/schedule.hasNext}}
              {{^schedule.hasNext}}<p class="muted">None: {{#schedule.paused}}paused.{{/schedule.paused}}{{^schedule.paused}}the rule has ended.{{/schedule.paused}}</p>{{/schedule.hasNext}}
            </div>
            <div class="card" id="occurrences">
              <h2>Its pushes</h2>
              {{#hasPushes}}
              <table>
                <thead><tr><th>Push</th><th>State</th><th class="hide-narrow">Created (UTC)</th><th class="num">Targeted</th><th class="num hide-narrow">Accepted</th></tr></thead>
                <tbody>
                {{#pushes}}<tr><td><a class="mono" href="/console/pushes/{{id}}">{{shortID}}</a></td><td><span class="state {{stateClass}}">{{stateLabel}}</span></td><td class="hide-narrow">{{createdAt}}</td><td class="num">{{targeted}}</td><td class="num hide-narrow">{{accepted}}</td></tr>{{/pushes}}
                </tbody>
              </table>
              {{/hasPushes}}
              {{^hasPushes}}<p class="muted">No occurrence has fired yet.</p>{{/hasPushes}}
            </div>
          </div>
          <div>
            <div class="card">
              <h2>Actions</h2>
              <div class="actions">
                {{#schedule.paused}}<form method="post" action="/console/schedules/{{schedule.id}}/resume"><input type="hidden" name="csrf" value="{{chrome.csrf}}"><input type="hidden" name="confirmed" value="1"><button class="secondary" type="submit">Resume</button></form>{{/schedule.paused}}
                {{#schedule.pausable}}<form method="post" action="/console/schedules/{{schedule.id}}/pause"><input type="hidden" name="csrf" value="{{chrome.csrf}}"><input type="hidden" name="confirmed" value="1"><button class="secondary" type="submit">Pause</button></form>{{/schedule.pausable}}
                <form method="post" action="/console/schedules/{{schedule.id}}/delete" data-confirm="Delete this schedule? Its pushes stay."><input type="hidden" name="csrf" value="{{chrome.csrf}}"><input type="hidden" name="confirmed" value=""><button class="danger" type="submit">Delete</button></form>
              </div>
            </div>
            <div class="card">
              <h2>What it sends</h2>
              <dl class="facts">
                {{#schedule.title}}<dt>Title</dt><dd>{{schedule.title}}</dd>{{/schedule.title}}
                {{#schedule.body}}<dt>Body</dt><dd>{{schedule.body}}</dd>{{/schedule.body}}
                <dt>Audience</dt><dd class="mono">{{schedule.audience}}</dd>
                <dt>Pushes created</dt><dd>{{schedule.pushesCreated}}</dd>
                <dt>Occurrences skipped</dt><dd>{{schedule.skipped}}</dd>
                {{#schedule.lastSkip}}<dt>Last skipped</dt><dd>{{schedule.lastSkip}}</dd>{{/schedule.lastSkip}}
              </dl>
            </div>
          </div>
        </div>
        {{/content}}{{/layout}}
        """#
}
