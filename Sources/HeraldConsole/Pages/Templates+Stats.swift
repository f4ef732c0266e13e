/// The statistics page: pushes and outcomes over time.
extension ConsoleTemplates {
    static let stats = #"""
        {{<layout}}{{$content}}
        <h1>Statistics</h1>
        <p class="lede">Pushes created in the period and what became of them, per {{unit}} (UTC).</p>
        <div class="filters" role="navigation" aria-label="Period">
          {{#ranges}}<a href="/console/stats?range={{value}}"{{#selected}} aria-current="true"{{/selected}}>{{label}}</a>{{/ranges}}
        </div>
        <div class="stats">
          <div class="stat"><div class="label">Pushes</div><div class="value">{{pushes}}</div></div>
          <div class="stat"><div class="label">Targeted</div><div class="value">{{targeted}}</div></div>
          <div class="stat"><div class="label">Accepted</div><div class="value">{{accepted}}</div></div>
          <div class="stat"><div class="label">Failed</div><div class="value">{{failed}}</div></div>
          <div class="stat"><div class="label">Opened</div><div class="value" id="stats-opened">{{opened}}</div><div class="muted" id="stats-open-rate">{{openRate}}</div></div>
        </div>
        <div class="card">
          <h2>Devices reached per {{unit}}</h2>
          <svg class="timeline" viewBox="0 0 {{width}} 220" role="img" aria-label="{{summary}}">
            <line class="axis" x1="64" y1="190" x2="{{width}}" y2="190"/>
            <text class="tick" x="60" y="24" text-anchor="end">{{top}}</text>
            <text class="tick" x="60" y="190" text-anchor="end">0</text>
            {{#bars}}<g><title>{{title}}</title>
              <rect class="seg-accepted" x="{{x}}" y="{{acceptedY}}" width="{{barWidth}}" height="{{acceptedHeight}}"/>
              <rect class="seg-rejected" x="{{x}}" y="{{failedY}}" width="{{barWidth}}" height="{{failedHeight}}"/>
              <rect class="seg-canceled" x="{{x}}" y="{{canceledY}}" width="{{barWidth}}" height="{{canceledHeight}}"/></g>{{/bars}}
            {{#labels}}<text class="tick" x="{{x}}" y="210" text-anchor="middle">{{text}}</text>{{/labels}}
          </svg>
          <div class="legend">
            <span><svg aria-hidden="true"><rect class="seg-accepted" width="10" height="10" rx="2"/></svg>Accepted</span>
            <span><svg aria-hidden="true"><rect class="seg-rejected" width="10" height="10" rx="2"/></svg>Rejected or expired</span>
            <span><svg aria-hidden="true"><rect class="seg-canceled" width="10" height="10" rx="2"/></svg>Canceled</span>
          </div>
        </div>
        <div class="card">
          <h2>Open rate per {{unit}}</h2>
          <svg class="timeline" id="open-rate-chart" viewBox="0 0 {{width}} 220" role="img" aria-label="{{rateSummary}}">
            <line class="axis" x1="64" y1="190" x2="{{width}}" y2="190"/>
            <text class="tick" x="60" y="24" text-anchor="end">{{rateTop}}</text>
            <text class="tick" x="60" y="190" text-anchor="end">0%</text>
            <polyline class="rate-line" points="{{rateLine}}"/>
            {{#ratePoints}}<circle class="rate-point" cx="{{x}}" cy="{{y}}" r="3"><title>{{title}}</title></circle>{{/ratePoints}}
            {{#labels}}<text class="tick" x="{{x}}" y="210" text-anchor="middle">{{text}}</text>{{/labels}}
          </svg>
          <p class="hint">Devices that reported opening the {{unit}}'s pushes, of those the pushes reached through APNs or online (docs/engagement.md).</p>
        </div>
        <div class="card">
          <h2>Devices</h2>
          <dl class="facts">
            <dt>Active</dt><dd>{{devicesActive}}</dd>
            {{#environments}}<dt>{{name}}</dt><dd>{{count}}</dd>{{/environments}}
            <dt>Invalid (uninstalled, bad tokens)</dt><dd>{{devicesInvalid}}</dd>
          </dl>
        </div>
        {{/content}}{{/layout}}
        """#
}
