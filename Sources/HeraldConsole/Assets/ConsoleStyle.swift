/// The console's one style sheet, served as `/console/assets/console.css` (the Content-Security-
/// Policy allows styles from the console's own origin only: no inline styles, no CDN).
enum ConsoleStyle {
    static let css = #"""
        :root {
          --ink: #1b2230; --muted: #5d6778; --line: #dfe3ea; --paper: #f5f6f9; --card: #ffffff;
          --brand: #3454d1; --brand-dark: #243fa8; --good: #1f8a4c; --warn: #b7791f; --bad: #c53030;
          --grey: #8a94a6; --focus: #f0b429;
          font-family: -apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
          color: var(--ink); background: var(--paper); font-size: 15px; line-height: 1.45;
        }
        * { box-sizing: border-box; }
        body { margin: 0; }
        a { color: var(--brand); }
        a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, textarea:focus-visible,
        summary:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
        .skip { position: absolute; left: -999px; top: 0; background: var(--card); padding: 8px; }
        .skip:focus { left: 8px; z-index: 10; }
        header.top { background: #141a26; color: #fff; }
        header.top .inner { max-width: 1180px; margin: 0 auto; padding: 0 20px; display: flex; align-items: center;
          gap: 24px; min-height: 56px; flex-wrap: wrap; }
        .brand { font-weight: 700; font-size: 18px; letter-spacing: .2px; color: #fff; text-decoration: none;
          display: flex; align-items: center; gap: 8px; }
        .brand svg { width: 22px; height: 22px; }
        nav.main { display: flex; gap: 4px; flex: 1; flex-wrap: wrap; }
        nav.main a { color: #c9d1e3; text-decoration: none; padding: 8px 12px; border-radius: 6px; }
        nav.main a:hover { background: #222b3d; color: #fff; }
        nav.main a[aria-current="page"] { background: #2c3852; color: #fff; }
        .who { display: flex; align-items: center; gap: 12px; color: #c9d1e3; font-size: 13px; }
        .who strong { color: #fff; font-weight: 600; }
        .who form { margin: 0; }
        .who button { background: transparent; color: #c9d1e3; border: 1px solid #3a465f; padding: 5px 10px;
          border-radius: 6px; cursor: pointer; font: inherit; }
        .who button:hover { color: #fff; border-color: #6b7891; }
        main { max-width: 1180px; margin: 0 auto; padding: 24px 20px 64px; }
        h1 { font-size: 24px; margin: 0 0 4px; }
        h2 { font-size: 17px; margin: 0 0 12px; }
        .lede { color: var(--muted); margin: 0 0 20px; }
        .card { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 20px;
          margin-bottom: 20px; box-shadow: 0 1px 2px rgba(20, 26, 38, .04); }
        .grid { display: grid; grid-template-columns: minmax(0, 1fr) 360px; gap: 20px; align-items: start; }
        .row { display: flex; gap: 12px; flex-wrap: wrap; }
        .row > * { flex: 1; min-width: 160px; }
        label { display: block; font-weight: 600; font-size: 13px; margin: 0 0 4px; }
        .field { margin-bottom: 14px; }
        .hint { color: var(--muted); font-size: 12.5px; margin-top: 4px; }
        input[type=text], input[type=password], input[type=number], input[type=datetime-local], input[type=time], input[type=date],
        select, textarea {
          width: 100%; padding: 9px 10px; border: 1px solid #c8ced9; border-radius: 7px; font: inherit;
          background: #fff; color: var(--ink); }
        textarea { min-height: 76px; resize: vertical; }
        textarea.code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 13px; }
        .invalid input, .invalid textarea, .invalid select { border-color: var(--bad); }
        .field-error { color: var(--bad); font-size: 12.5px; margin-top: 4px; }
        fieldset { border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; margin: 0 0 14px; }
        legend { font-weight: 700; font-size: 13px; padding: 0 6px; }
        .choices { display: flex; gap: 8px; flex-wrap: wrap; margin-bottom: 12px; }
        .choices label { font-weight: 500; border: 1px solid #c8ced9; border-radius: 999px; padding: 6px 12px;
          cursor: pointer; margin: 0; display: flex; gap: 6px; align-items: center; }
        .check { display: flex; align-items: center; gap: 8px; font-weight: 500; }
        .button, button.primary, button.secondary, button.danger {
          display: inline-flex; align-items: center; gap: 6px; border-radius: 7px; padding: 9px 16px; font: inherit;
          font-weight: 600; cursor: pointer; border: 1px solid transparent; text-decoration: none; }
        button.primary, .button.primary { background: var(--brand); color: #fff; }
        button.primary:hover { background: var(--brand-dark); }
        button.primary[disabled] { background: #a9b4d6; cursor: not-allowed; }
        button.secondary, .button.secondary { background: #fff; color: var(--ink); border-color: #c8ced9; }
        button.secondary:hover { border-color: var(--grey); }
        button.danger { background: #fff; color: var(--bad); border-color: #e7b3b3; }
        button.danger:hover { background: #fdf2f2; }
        .actions { display: flex; gap: 10px; flex-wrap: wrap; align-items: center; }
        .actions form { margin: 0; }
        .notice, .alert { border-radius: 8px; padding: 12px 14px; margin-bottom: 16px; }
        .notice { background: #e9f7ef; border: 1px solid #b5e0c6; color: #14532d; }
        .alert { background: #fdf2f2; border: 1px solid #f1c0c0; color: #7f1d1d; }
        table { width: 100%; border-collapse: collapse; }
        th, td { text-align: left; padding: 10px 8px; border-bottom: 1px solid var(--line); vertical-align: middle; }
        th { font-size: 12px; text-transform: uppercase; letter-spacing: .4px; color: var(--muted); }
        td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
        caption { caption-side: bottom; text-align: left; padding-top: 8px; font-size: 13px; }
        .mono { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 13px; }
        .state { display: inline-block; border-radius: 999px; padding: 2px 10px; font-size: 12px; font-weight: 600;
          background: #eef1f6; color: #394255; }
        .state.completed { background: #e6f4ea; color: #1f6f3f; }
        .state.canceled { background: #f3f4f6; color: #6b7280; }
        .state.sending, .state.fanning_out { background: #e8edff; color: #2841a6; }
        .state.scheduled, .state.accepted { background: #fff6e0; color: #8a5a00; }
        .state.paused { background: #fde8d7; color: #9a4a0b; }
        .mini { width: 120px; height: 8px; }
        .filters { display: flex; gap: 6px; flex-wrap: wrap; align-items: center; margin-bottom: 14px; }
        .filters a { padding: 6px 12px; border-radius: 999px; border: 1px solid var(--line); text-decoration: none;
          color: var(--ink); background: #fff; font-size: 13px; }
        .filters a[aria-current="true"] { background: var(--ink); color: #fff; border-color: var(--ink); }
        .search { display: flex; gap: 8px; margin-left: auto; }
        .search input { width: 320px; }
        .pager { display: flex; justify-content: flex-end; margin-top: 14px; }
        .stats { display: grid; grid-template-columns: repeat(4, minmax(0, 1fr)); gap: 12px; margin: 16px 0; }
        .stat { border: 1px solid var(--line); border-radius: 8px; padding: 12px; }
        .stat .label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .4px; }
        .stat .value { font-size: 22px; font-weight: 700; font-variant-numeric: tabular-nums; }
        .bar { width: 100%; height: 14px; display: block; }
        .bar .track { fill: #e7eaf0; }
        .bar .fill { fill: var(--brand); }
        .bar.done .fill { fill: var(--good); }
        .chart { width: 100%; height: 28px; display: block; }
        .seg-accepted { fill: var(--good); } .seg-online { fill: #2b7bb9; } .seg-rejected { fill: var(--bad); } .seg-expired { fill: var(--warn); }
        .seg-canceled { fill: var(--grey); } .seg-skipped { fill: #a78bfa; } .seg-pending { fill: #e7eaf0; }
        .legend { display: flex; gap: 16px; flex-wrap: wrap; font-size: 13px; margin-top: 10px; }
        .legend span { display: inline-flex; align-items: center; gap: 6px; }
        .legend svg { width: 10px; height: 10px; }
        .reasons svg { width: 100%; }
        .reasons text { font-size: 12px; fill: var(--ink); }
        .reasons .reason-bar { fill: var(--bad); }
        dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 6px 12px; margin: 0; font-size: 14px; }
        dl.facts dt { color: var(--muted); }
        dl.facts dd { margin: 0; }
        .phone { background: linear-gradient(160deg, #2b3a67, #6b4c8a 60%, #c06c84); border-radius: 28px;
          padding: 56px 14px 80px; min-height: 340px; }
        .phone .clock { color: #fff; text-align: center; font-size: 52px; font-weight: 300; margin-bottom: 24px; }
        .bubble { background: rgba(255, 255, 255, .82); border-radius: 16px; padding: 10px 12px; font-size: 13px;
          backdrop-filter: blur(6px); }
        .bubble .app { display: flex; justify-content: space-between; color: #555; font-size: 11px;
          text-transform: uppercase; margin-bottom: 2px; }
        .bubble .t { font-weight: 700; } .bubble .s { font-weight: 600; }
        .bubble .b { white-space: pre-wrap; overflow-wrap: anywhere; }
        pre.payload { margin: 0; padding: 10px 12px; background: var(--bg, #f6f7f9); border-radius: 8px; font-size: 12px;
          white-space: pre-wrap; overflow-wrap: anywhere; max-height: 320px; overflow: auto; }
        .dryrun dl { display: grid; grid-template-columns: 1fr auto; gap: 6px; margin: 0 0 10px; }
        .dryrun dd { margin: 0; font-weight: 700; text-align: right; font-variant-numeric: tabular-nums; }
        .dryrun ul { margin: 6px 0 0; padding-left: 18px; color: var(--warn); }
        .dryrun ul.waves { color: inherit; padding-left: 0; list-style: none; }
        .dryrun ul.waves li { margin: 2px 0; }
        ul.plain { margin: 4px 0 0; padding-left: 0; list-style: none; }
        dl.facts + h2 { margin-top: 20px; }
        .dryrun .status { font-weight: 600; margin-bottom: 8px; }
        .dryrun .status.ok { color: var(--good); } .dryrun .status.bad { color: var(--bad); }
        .signin { max-width: 420px; margin: 8vh auto; }
        .signin .brand-large { display: flex; gap: 10px; align-items: center; font-size: 26px; font-weight: 700;
          margin-bottom: 16px; }
        .signin .brand-large svg { width: 34px; height: 34px; }
        .muted { color: var(--muted); }
        .section-gap { margin-top: 24px; }
        .reasons-title { margin-top: 18px; }
        .timeline { width: 100%; height: auto; display: block; }
        .timeline .axis { stroke: var(--line); stroke-width: 1; }
        .timeline .tick { font-size: 11px; fill: var(--muted); }
        .timeline .rate-line { fill: none; stroke: #2b7bb9; stroke-width: 2; }
        .timeline .rate-point { fill: #2b7bb9; }
        input.secret { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 13px; background: #f7f8fb; }
        [hidden] { display: none !important; }
        @media (max-width: 900px) {
          .grid { grid-template-columns: minmax(0, 1fr); }
          .stats { grid-template-columns: repeat(2, minmax(0, 1fr)); }
          .search { margin-left: 0; width: 100%; }
          .search input { width: 100%; }
          dl.facts { grid-template-columns: 1fr; }
          dl.facts dd { margin-bottom: 8px; }
          .hide-narrow { display: none; }
          header.top .inner { padding: 8px 14px; gap: 8px; }
          main { padding: 16px 12px 48px; }
        }
        """#
}
