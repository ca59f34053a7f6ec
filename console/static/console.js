// herald console: live refresh of the parts of a page marked
// data-refresh (the overview, the replays), without a full reload. The
// pages read the same without it. No inline script anywhere: the
// Content-Security-Policy allows only this file.
"use strict";
(function () {
  var live = document.querySelector("[data-refresh]");
  if (!live) {
    return;
  }
  var url = live.getAttribute("data-refresh");
  var seconds = parseInt(live.getAttribute("data-interval"), 10) || 5;
  var failures = 0;
  function refresh() {
    fetch(url, { credentials: "same-origin", redirect: "error", headers: { "Accept": "text/html" } })
      .then(function (resp) {
        if (!resp.ok) {
          throw new Error("HTTP " + resp.status);
        }
        return resp.text();
      })
      .then(function (html) {
        // The fragment is the console's own template output, escaped by
        // html/template on the server.
        live.innerHTML = html;
        live.removeAttribute("data-stale");
        failures = 0;
        schedule();
      })
      .catch(function () {
        live.setAttribute("data-stale", "true");
        failures++;
        if (failures < 20) {
          schedule();
        }
      });
  }
  function schedule() {
    window.setTimeout(refresh, seconds * 1000);
  }
  schedule();
})();
