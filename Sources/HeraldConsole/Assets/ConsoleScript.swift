/// The console's one script, served as `/console/assets/console.js`: the live parts (the dry run
/// while composing, progress over Server-Sent Events) and confirmations. Every page works
/// without it; it only makes them live.
enum ConsoleScript {
    static let javaScript = #"""
        "use strict";
        (function () {
          function $(selector, root) { return (root || document).querySelector(selector); }
          function $all(selector, root) { return Array.prototype.slice.call((root || document).querySelectorAll(selector)); }
          function number(n) { return Number(n || 0).toLocaleString("en-US"); }

          // Confirmation before an action that cannot be undone (cancel, recall, send).
          $all("form[data-confirm]").forEach(function (form) {
            form.addEventListener("submit", function (event) {
              if (!window.confirm(form.getAttribute("data-confirm"))) { event.preventDefault(); return; }
              var confirmed = $("input[name=confirmed]", form);
              if (confirmed) { confirmed.value = "1"; }
            });
          });

          // Compose: a dry run of what the form says, each time it changes; Send waits for it.
          var compose = $("form#compose");
          if (compose) {
            var send = $("#send", compose), status = $("#dryrun-status"), timer = null, sequence = 0, checked = null;
            // What the form says, as it would be posted: the dry run is valid for exactly this.
            function snapshot() { return new URLSearchParams(new FormData(compose)).toString(); }
            var preview = { title: $("#preview-title"), subtitle: $("#preview-subtitle"), body: $("#preview-body") };
            function showAudienceFields() {
              var chosen = $("input[name=audience]:checked", compose);
              $all("[data-audience]", compose).forEach(function (group) {
                group.hidden = !chosen || group.getAttribute("data-audience") !== chosen.value;
              });
              var throttle = $("select[name=throttle]", compose);
              $all("[data-throttle]", compose).forEach(function (group) {
                group.hidden = !throttle || group.getAttribute("data-throttle") !== throttle.value;
              });
            }
            function updatePreview() {
              ["title", "subtitle", "body"].forEach(function (name) {
                var field = compose.elements[name];
                if (field && preview[name]) { preview[name].textContent = field.value; }
              });
              var data = compose.elements["data"], error = $("#data-error");
              if (data && error) {
                var message = "";
                if (data.value.trim() !== "") {
                  try {
                    var parsed = JSON.parse(data.value);
                    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) { message = "Custom data is a JSON object: { \"key\": value }."; }
                  } catch (e) { message = "Not JSON yet: " + e.message; }
                }
                error.textContent = message;
                error.hidden = message === "";
                data.closest(".field").classList.toggle("invalid", message !== "");
              }
            }
            function render(result) {
              $("#dryrun-size").textContent = result.audience_size === undefined ? "–" :
                (result.audience_size_estimated ? "about " : "") + number(result.audience_size);
              $("#dryrun-bytes").textContent = result.payload_bytes === undefined ? "–" :
                number(result.payload_bytes) + " of " + number(result.payload_limit);
              $("#dryrun-class").textContent = result.priority_class || "–";
              var waves = $("#dryrun-waves");
              waves.textContent = "";
              (result.waves || []).forEach(function (wave) {
                var item = document.createElement("li"), when = document.createElement("strong"), zones = document.createElement("span");
                when.textContent = wave.at; zones.className = "muted"; zones.textContent = wave.zones;
                item.appendChild(when); item.appendChild(document.createTextNode(" · " + wave.devices + " devices"));
                item.appendChild(document.createElement("br")); item.appendChild(zones); waves.appendChild(item);
              });
              var warnings = $("#dryrun-warnings");
              warnings.textContent = "";
              (result.warnings || []).forEach(function (text) {
                var item = document.createElement("li"); item.textContent = text; warnings.appendChild(item);
              });
              status.className = "status " + (result.ok ? "ok" : "bad");
              status.textContent = result.ok ? "Ready to send." : result.error;
              send.disabled = !result.ok;
            }
            function check() {
              var mine = ++sequence, body = snapshot();
              status.className = "status"; status.textContent = "Checking…";
              fetch("/console/compose/check", { method: "POST", body: new URLSearchParams(body), credentials: "same-origin",
                headers: { "Accept": "application/json" } })
                .then(function (response) { return response.json(); })
                .then(function (result) {
                  if (mine !== sequence) { return; }
                  checked = result.ok ? body : null;
                  render(result);
                })
                .catch(function () { if (mine === sequence) { render({ ok: false, error: "The dry run could not reach Herald; try again." }); } });
            }
            function changed() {
              showAudienceFields();
              updatePreview();
              // A field that loses focus fires "change" without changing anything (as the
              // pointer goes to Send): the dry run still holds then.
              if (snapshot() === checked) { return; }
              send.disabled = true;
              clearTimeout(timer);
              timer = setTimeout(check, 350);
            }
            compose.addEventListener("input", changed);
            compose.addEventListener("change", changed);
            compose.addEventListener("submit", function (event) {
              var submitter = event.submitter;
              if (submitter && submitter.id === "send") {
                if (send.getAttribute("data-sent") === "1") { event.preventDefault(); return; }
                send.setAttribute("data-sent", "1");
              }
            });
            showAudienceFields();
            updatePreview();
            check();
          }

          // Push detail: the devices left out, never sent, by reason (the words of PushView.skipReasons).
          var skipReasons = {
            quiet_hours: "in their quiet hours (delivery policy)", capped: "at the frequency cap (delivery policy)",
            offline: "not connected (an in-app only push)",
            not_authorized: "notifications turned off on the device (skip_unauthorized)"
          };
          function showSkipped(c) {
            var detail = $("#skipped-detail"); if (!detail) { return; }
            var byReason = c.skipped_by_reason || {};
            detail.hidden = !(c.skipped > 0);
            detail.textContent = "Skipped, never sent: " + Object.keys(byReason).sort().map(function (name) {
              return (skipReasons[name] || name) + " " + number(byReason[name]);
            }).join(", ");
          }

          // Push detail: the rejections by reason, drawn as the page draws them (PushView.swift).
          function drawReasons(byReason) {
            var box = $("#reasons"), chart = $("#reasons-chart"); if (!box || !chart) { return; }
            var entries = Object.keys(byReason || {}).map(function (name) { return [name, byReason[name]]; })
              .sort(function (a, b) { return a[1] === b[1] ? (a[0] < b[0] ? -1 : 1) : b[1] - a[1]; });
            box.hidden = entries.length === 0;
            var ns = "http://www.w3.org/2000/svg", largest = entries.length > 0 ? entries[0][1] : 1;
            while (chart.firstChild) { chart.removeChild(chart.firstChild); }
            function element(name, attributes, text) {
              var node = document.createElementNS(ns, name);
              Object.keys(attributes).forEach(function (key) { node.setAttribute(key, attributes[key]); });
              if (text !== undefined) { node.textContent = text; }
              chart.appendChild(node);
            }
            entries.forEach(function (entry, index) {
              var width = Math.max(2, (entry[1] / largest) * 320), top = index * 24;
              element("text", { x: 0, y: top + 16 }, entry[0]);
              element("rect", { "class": "reason-bar", x: 200, y: top + 4, width: width.toFixed(1), height: 14, rx: 3 });
              element("text", { x: (208 + width).toFixed(1), y: top + 16 }, number(entry[1]));
            });
            chart.setAttribute("viewBox", "0 0 600 " + (entries.length * 24 + 4));
          }

          // Push detail: the buttons that apply now, by the rules of PushActions (PushView.swift).
          function showActions(push) {
            var ended = push.state === "completed" || push.state === "canceled", isRecall = !!push.recall_of;
            var allowed = {
              pause: !ended && !push.paused && push.state !== "sending" && !isRecall,
              resume: !ended && !!push.paused,
              cancel: !ended,
              recall: !isRecall && push.state !== "scheduled"
            };
            var any = !!$(".actions a.button");
            Object.keys(allowed).forEach(function (name) {
              var form = $("form[data-action=" + name + "]");
              if (form) { form.hidden = !allowed[name]; any = any || allowed[name]; }
            });
            var none = $("#no-actions"); if (none) { none.hidden = any; }
          }

          // Push detail: devices keep reporting opens long after the push ended; the engagement
          // and variants cards are read again from the page every few seconds.
          Array.prototype.forEach.call(document.querySelectorAll("[data-refresh][id]"), function (card) {
            if (!window.fetch || !window.DOMParser) { return; }
            setInterval(function () {
              fetch(window.location.pathname, { credentials: "same-origin" }).then(function (answer) {
                return answer.ok ? answer.text() : null;
              }).then(function (html) {
                if (!html) { return; }
                var fresh = new DOMParser().parseFromString(html, "text/html").getElementById(card.id);
                if (fresh) { card.innerHTML = fresh.innerHTML; }
              }).catch(function () {});
            }, 1000 * Number(card.getAttribute("data-refresh")));
          });

          // Push detail: live progress over Server-Sent Events until the push ends.
          var live = $("#live[data-events]");
          if (live && window.EventSource) {
            var source = new EventSource(live.getAttribute("data-events"));
            var samples = [];
            source.addEventListener("progress", function (event) {
              var push = JSON.parse(event.data), c = push.counters;
              var target = push.audience_size || c.targeted || 0;
              var failed = c.rejected + c.expired;
              var done = c.accepted + (c.delivered_online || 0) + failed + c.canceled + (c.skipped || 0);
              var percent = target > 0 ? Math.min(100, (100 * done) / target) : (push.state === "completed" ? 100 : 0);
              $("#progress-fill").setAttribute("width", percent.toFixed(2) + "%");
              $("#progress-text").textContent = number(done) + " of " + number(target) + " (" + Math.floor(percent) + "%)";
              [["accepted", c.accepted], ["failed", failed], ["canceled", c.canceled], ["targeted", target]].forEach(function (pair) {
                var cell = $("#count-" + pair[0]); if (cell) { cell.textContent = number(pair[1]); }
              });
              var state = $("#push-state");
              state.textContent = push.paused ? "paused" : push.state.replace("_", " ");
              state.className = "state " + (push.paused ? "paused" : push.state);
              var now = Date.now();
              samples.push([now, done]);
              while (samples.length > 1 && now - samples[0][0] > 10000) { samples.shift(); }
              var rate = 0;
              if (samples.length > 1) {
                var span = (samples[samples.length - 1][0] - samples[0][0]) / 1000;
                if (span > 0) { rate = (samples[samples.length - 1][1] - samples[0][1]) / span; }
              }
              $("#rate").textContent = rate > 0 ? number(Math.round(rate)) + "/s" : "–";
              var eta = "–";
              if (push.eta) { eta = new Date(push.eta).toISOString().replace("T", " ").slice(0, 19) + " UTC"; }
              else if (rate > 0 && target > done) { eta = "about " + Math.ceil((target - done) / rate) + " s"; }
              $("#eta").textContent = eta;
              var total = Math.max(target, 1);
              var x = 0;
              var outcomes = [["accepted", c.accepted], ["online", c.delivered_online || 0], ["rejected", c.rejected], ["expired", c.expired], ["canceled", c.canceled], ["skipped", c.skipped || 0]];
              outcomes.forEach(function (pair) {
                var legend = $("#legend-" + pair[0]); if (legend) { legend.textContent = number(pair[1]); }
                var rect = $("#seg-" + pair[0]); if (!rect) { return; }
                var width = (100 * pair[1]) / total;
                rect.setAttribute("x", x.toFixed(3) + "%"); rect.setAttribute("width", width.toFixed(3) + "%");
                x += width;
              });
              var chart = $("#outcomes-chart");
              if (chart) {
                chart.setAttribute("aria-label", outcomes.filter(function (pair) { return pair[0] !== "skipped" || pair[1] > 0; })
                  .map(function (pair, index) { return (index === 0 ? "Accepted" : pair[0]) + " " + number(pair[1]); }).join(", ") + " of " + number(target));
              }
              showSkipped(c);
              drawReasons(c.rejected_by_reason);
              showActions(push);
              if (push.state === "completed" || push.state === "canceled") {
                $("#progress-bar").classList.add("done");
                source.close();
                // The page again, for the final figures and the actions that remain.
                setTimeout(function () { window.location.replace(window.location.pathname); }, 600);
              }
            });
          }
        })();
        """#
}
