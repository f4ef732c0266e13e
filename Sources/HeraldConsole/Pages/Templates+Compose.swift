/// The compose page: audience, notification, options, a lock-screen preview and the dry run.
extension ConsoleTemplates {
    static let compose = #"""
        {{<layout}}{{$content}}
        <h1>{{#form.replaces}}Send a correction{{/form.replaces}}{{^form.replaces}}Compose a push{{/form.replaces}}</h1>
        <p class="lede">{{#form.replaces}}The correction takes the collapse id of push <a class="mono" href="/console/pushes/{{form.replaces}}">{{form.replaces}}</a>, so phones that got it show this one instead.{{/form.replaces}}{{^form.replaces}}Choose who gets it and what they see. The dry run checks it before Send is enabled.{{/form.replaces}}</p>
        <form id="compose" method="post" action="/console/compose" novalidate>
        <input type="hidden" name="csrf" value="{{chrome.csrf}}">
        <input type="hidden" name="idempotency_key" value="{{idempotencyKey}}">
        {{#form.replaces}}<input type="hidden" name="replaces" value="{{form.replaces}}">{{/form.replaces}}
        <div class="grid">
          <div>
            <div class="card">
              <h2>Audience</h2>
              <div class="choices" role="radiogroup" aria-label="Who gets the push">
                {{#audiences}}<label><input type="radio" name="audience" value="{{value}}"{{#checked}} checked{{/checked}}> {{label}}</label>{{/audiences}}
              </div>
              <div data-audience="tags"{{^audienceIs.tags}} hidden{{/audienceIs.tags}}>
                <div class="row">
                  <div class="field{{#invalid.tags_any}} invalid{{/invalid.tags_any}}"><label for="tags_any">Any of these tags</label>
                    <input id="tags_any" name="tags_any" type="text" value="{{form.tagsAny}}" placeholder="vip, beta">
                    {{#invalid.tags_any}}<div class="field-error">{{invalid.tags_any}}</div>{{/invalid.tags_any}}</div>
                  <div class="field"><label for="tags_all">All of these tags</label>
                    <input id="tags_all" name="tags_all" type="text" value="{{form.tagsAll}}" placeholder="lang-en"></div>
                  <div class="field"><label for="tags_none">None of these tags</label>
                    <input id="tags_none" name="tags_none" type="text" value="{{form.tagsNone}}" placeholder="opted-out"></div>
                </div>
                <div class="hint">Separate tags with commas.</div>
              </div>
              <div data-audience="aliases"{{^audienceIs.aliases}} hidden{{/audienceIs.aliases}}>
                <div class="field{{#invalid.aliases}} invalid{{/invalid.aliases}}"><label for="aliases">Aliases (your user ids), one per line</label>
                  <textarea id="aliases" name="aliases">{{form.aliases}}</textarea>
                  {{#invalid.aliases}}<div class="field-error">{{invalid.aliases}}</div>{{/invalid.aliases}}</div>
              </div>
              <div data-audience="ids"{{^audienceIs.ids}} hidden{{/audienceIs.ids}}>
                <div class="field{{#invalid.registration_ids}} invalid{{/invalid.registration_ids}}"><label for="registration_ids">Registration ids, one per line</label>
                  <textarea id="registration_ids" name="registration_ids">{{form.registrationIDs}}</textarea>
                  {{#invalid.registration_ids}}<div class="field-error">{{invalid.registration_ids}}</div>{{/invalid.registration_ids}}</div>
              </div>
              <div class="field"><label for="environment">Environment</label>
                <select id="environment" name="environment">
                  {{#environments}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/environments}}
                </select></div>
            </div>
            <div class="card">
              <h2>Notification</h2>
              <div class="field{{#invalid.title}} invalid{{/invalid.title}}"><label for="title">Title</label>
                <input id="title" name="title" type="text" value="{{form.title}}" maxlength="4096">
                {{#invalid.title}}<div class="field-error">{{invalid.title}}</div>{{/invalid.title}}</div>
              <div class="field"><label for="subtitle">Subtitle</label>
                <input id="subtitle" name="subtitle" type="text" value="{{form.subtitle}}" maxlength="4096"></div>
              <div class="field{{#invalid.body}} invalid{{/invalid.body}}"><label for="body">Body</label>
                <textarea id="body" name="body" maxlength="4096">{{form.body}}</textarea>
                {{#invalid.body}}<div class="field-error">{{invalid.body}}</div>{{/invalid.body}}</div>
              <div class="row">
                <div class="field{{#invalid.badge}} invalid{{/invalid.badge}}"><label for="badge">Badge</label>
                  <input id="badge" name="badge" type="number" min="0" value="{{form.badge}}">
                  {{#invalid.badge}}<div class="field-error">{{invalid.badge}}</div>{{/invalid.badge}}</div>
                <div class="field"><label for="sound">Sound</label>
                  <input id="sound" name="sound" type="text" value="{{form.sound}}" placeholder="default"></div>
                <div class="field"><label for="category">Category</label>
                  <input id="category" name="category" type="text" value="{{form.category}}"></div>
                <div class="field"><label for="thread_id">Thread id</label>
                  <input id="thread_id" name="thread_id" type="text" value="{{form.threadID}}"></div>
              </div>
              <div class="field"><label class="check"><input type="checkbox" name="silent"{{#silent}} checked{{/silent}}> Silent (a background update, nothing shown)</label></div>
              <div class="field{{#invalid.data}} invalid{{/invalid.data}}"><label for="data">Custom data (JSON object)</label>
                <textarea id="data" name="data" class="code" spellcheck="false" placeholder='{"screen": "sale"}'>{{form.data}}</textarea>
                <div id="data-error" class="field-error"{{^invalid.data}} hidden{{/invalid.data}}>{{invalid.data}}</div></div>
            </div>
            <div class="card">
              <h2>Options</h2>
              <div class="row">
                <div class="field{{#invalid.collapse_id}} invalid{{/invalid.collapse_id}}"><label for="collapse_id">Collapse id</label>
                  <input id="collapse_id" name="collapse_id" type="text" value="{{form.collapseID}}" maxlength="64">
                  {{#invalid.collapse_id}}<div class="field-error">{{invalid.collapse_id}}</div>{{/invalid.collapse_id}}</div>
                <div class="field{{#invalid.ttl_seconds}} invalid{{/invalid.ttl_seconds}}"><label for="ttl_seconds">Time to live (seconds)</label>
                  <input id="ttl_seconds" name="ttl_seconds" type="number" min="1" value="{{form.timeToLiveSeconds}}">
                  {{#invalid.ttl_seconds}}<div class="field-error">{{invalid.ttl_seconds}}</div>{{/invalid.ttl_seconds}}</div>
                <div class="field{{#invalid.scheduled_at}} invalid{{/invalid.scheduled_at}}"><label for="scheduled_at">Send at (UTC)</label>
                  <input id="scheduled_at" name="scheduled_at" type="datetime-local" value="{{form.scheduledAt}}">
                  {{#invalid.scheduled_at}}<div class="field-error">{{invalid.scheduled_at}}</div>{{/invalid.scheduled_at}}</div>
              </div>
              <div class="row">
                <div class="field"><label for="throttle">Pace</label>
                  <select id="throttle" name="throttle">
                    {{#throttles}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/throttles}}
                  </select></div>
                <div class="field{{#invalid.throttle_per_second}} invalid{{/invalid.throttle_per_second}}" data-throttle="rate"{{^throttleIs.rate}} hidden{{/throttleIs.rate}}><label for="throttle_per_second">Devices per second</label>
                  <input id="throttle_per_second" name="throttle_per_second" type="number" min="1" value="{{form.throttlePerSecond}}">
                  {{#invalid.throttle_per_second}}<div class="field-error">{{invalid.throttle_per_second}}</div>{{/invalid.throttle_per_second}}</div>
                <div class="field{{#invalid.finish_within_minutes}} invalid{{/invalid.finish_within_minutes}}" data-throttle="deadline"{{^throttleIs.deadline}} hidden{{/throttleIs.deadline}}><label for="finish_within_minutes">Finish within (minutes)</label>
                  <input id="finish_within_minutes" name="finish_within_minutes" type="number" min="1" value="{{form.finishWithinMinutes}}">
                  {{#invalid.finish_within_minutes}}<div class="field-error">{{invalid.finish_within_minutes}}</div>{{/invalid.finish_within_minutes}}</div>
              </div>
              <div class="row">
                <div class="field{{#invalid.priority_class}} invalid{{/invalid.priority_class}}"><label for="priority_class">Class</label>
                  <select id="priority_class" name="priority_class">
                    {{#priorityClasses}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/priorityClasses}}
                  </select>
                  {{#invalid.priority_class}}<div class="field-error">{{invalid.priority_class}}</div>{{/invalid.priority_class}}</div>
                <div class="field{{#invalid.quiet_hours}} invalid{{/invalid.quiet_hours}}"><label for="quiet_hours">The app's quiet hours</label>
                  <select id="quiet_hours" name="quiet_hours">
                    {{#quietHoursModes}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/quietHoursModes}}
                  </select>
                  {{#invalid.quiet_hours}}<div class="field-error">{{invalid.quiet_hours}}</div>{{/invalid.quiet_hours}}</div>
                <div class="field{{#invalid.channel}} invalid{{/invalid.channel}}"><label for="channel">Channel</label>
                  <select id="channel" name="channel">
                    {{#channels}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/channels}}
                  </select>
                  {{#invalid.channel}}<div class="field-error">{{invalid.channel}}</div>{{/invalid.channel}}</div>
              </div>
              <div class="row">
                <div class="field{{#invalid.skip_unauthorized}} invalid{{/invalid.skip_unauthorized}}"><label class="check"><input type="checkbox" id="skip_unauthorized" name="skip_unauthorized"{{#skipUnauthorized}} checked{{/skipUnauthorized}}> Skip devices whose notifications are off (counted skipped, not_authorized)</label>
                  {{#invalid.skip_unauthorized}}<div class="field-error">{{invalid.skip_unauthorized}}</div>{{/invalid.skip_unauthorized}}</div>
                <div class="field{{#invalid.holdout_percent}} invalid{{/invalid.holdout_percent}}"><label for="holdout_percent">Holdout (% of the audience never sent, to compare with)</label>
                  <input id="holdout_percent" name="holdout_percent" type="number" min="0" max="50" step="1" value="{{form.holdoutPercent}}">
                  {{#invalid.holdout_percent}}<div class="field-error">{{invalid.holdout_percent}}</div>{{/invalid.holdout_percent}}</div>
              </div>
              <div class="row">
                <div class="field{{#invalid.local_time}} invalid{{/invalid.local_time}}"><label for="local_time">At a local time (HH:MM, each device's own time zone)</label>
                  <input id="local_time" name="local_time" type="time" value="{{form.localTime}}">
                  {{#invalid.local_time}}<div class="field-error">{{invalid.local_time}}</div>{{/invalid.local_time}}</div>
                <div class="field{{#invalid.local_date}} invalid{{/invalid.local_date}}"><label for="local_date">On (local date; empty: the next time)</label>
                  <input id="local_date" name="local_date" type="date" value="{{form.localDate}}">
                  {{#invalid.local_date}}<div class="field-error">{{invalid.local_date}}</div>{{/invalid.local_date}}</div>
              </div>
            </div>
          </div>
          <div>
            <div class="card">
              <h2>Preview</h2>
              <div class="phone" aria-label="Lock-screen preview">
                <div class="clock" aria-hidden="true">9:41</div>
                <div class="bubble">
                  <div class="app"><span>{{chrome.appName}}</span><span>now</span></div>
                  <div class="t" id="preview-title">{{form.title}}</div>
                  <div class="s" id="preview-subtitle">{{form.subtitle}}</div>
                  <div class="b" id="preview-body">{{form.body}}</div>
                </div>
              </div>
            </div>
            <div class="card dryrun" aria-live="polite">
              <h2>Dry run</h2>
              <div id="dryrun-status" class="status{{#check.ok}} ok{{/check.ok}}{{#check.error}} bad{{/check.error}}">{{#check.ok}}Ready to send.{{/check.ok}}{{check.error}}{{^check}}Press Check to see who gets it.{{/check}}</div>
              <dl>
                <dt>Devices</dt><dd id="dryrun-size">{{#check.size}}{{check.size}}{{/check.size}}{{^check.size}}–{{/check.size}}</dd>
                <dt>Payload bytes</dt><dd id="dryrun-bytes">{{#check.bytes}}{{check.bytes}}{{/check.bytes}}{{^check.bytes}}–{{/check.bytes}}</dd>
                <dt>Class</dt><dd id="dryrun-class">{{#check.priorityClass}}{{check.priorityClass}}{{/check.priorityClass}}{{^check.priorityClass}}–{{/check.priorityClass}}</dd>
              </dl>
              <ul id="dryrun-waves" class="waves" aria-label="Waves by time zone">{{#check.waves}}<li><strong>{{at}}</strong> · {{devices}} devices<br><span class="muted">{{zones}}</span></li>{{/check.waves}}</ul>
              <ul id="dryrun-warnings">{{#check.warnings}}<li>{{.}}</li>{{/check.warnings}}</ul>
              <div class="actions">
                <button class="secondary" type="submit" name="action" value="check">Check</button>
                <button class="primary" id="send" type="submit" name="action" value="send"{{^check.ok}} disabled{{/check.ok}}>Send</button>
              </div>
            </div>
          </div>
        </div>
        </form>
        {{/content}}{{/layout}}
        """#
}
