"use strict";
(function () {
  // Connectors: every <path data-from data-to> in an <svg class="links">
  // is drawn between the two elements it names, inside the svg's parent.
  function draw(box) {
    var svg = box.querySelector(":scope > svg.links");
    if (!svg || box.offsetParent === null) return;
    var o = box.getBoundingClientRect();
    svg.setAttribute("width", box.scrollWidth);
    svg.setAttribute("height", box.scrollHeight);
    svg.querySelectorAll("path[data-from]").forEach(function (p) {
      var a = document.getElementById(p.getAttribute("data-from"));
      var b = document.getElementById(p.getAttribute("data-to"));
      if (!a || !b || a.offsetParent === null || b.offsetParent === null) {
        p.setAttribute("d", "");
        return;
      }
      var ra = a.getBoundingClientRect(), rb = b.getBoundingClientRect();
      var ay = ra.top + ra.height / 2 - o.top, by = rb.top + rb.height / 2 - o.top;
      var ax, bx, c1, c2;
      if (rb.left >= ra.right - 1) {
        ax = ra.right - o.left; bx = rb.left - o.left; c1 = c2 = (ax + bx) / 2;
      } else if (rb.right <= ra.left + 1) {
        ax = ra.left - o.left; bx = rb.right - o.left; c1 = c2 = (ax + bx) / 2;
      } else {
        ax = ra.right - o.left; bx = rb.right - o.left;
        c1 = c2 = Math.max(ax, bx) + 18 + Math.min(40, Math.abs(by - ay) / 8);
      }
      p.setAttribute("d", "M" + ax.toFixed(1) + " " + ay.toFixed(1) + " C" + c1.toFixed(1) + " " +
        ay.toFixed(1) + " " + c2.toFixed(1) + " " + by.toFixed(1) + " " + bx.toFixed(1) + " " + by.toFixed(1));
    });
    svg.setAttribute("data-drawn", "1");
  }
  function drawAll() {
    document.querySelectorAll(".linked").forEach(draw);
  }
  // The filter: a finding (and its marks at messages) shows when its rule
  // and its severity are both ticked; a conversation whose findings are
  // all hidden is hidden, and so is its entry in the index.
  var boxes = document.querySelectorAll("#filter input[type=checkbox]");
  function filter() {
    var off = {};
    boxes.forEach(function (b) {
      if (!b.checked) off[b.getAttribute("data-kind") + ":" + b.value] = true;
    });
    document.querySelectorAll("[data-rule][data-sev]").forEach(function (e) {
      e.hidden = !!(off["rule:" + e.getAttribute("data-rule")] || off["sev:" + e.getAttribute("data-sev")]);
    });
    document.querySelectorAll("section.conv").forEach(function (s) {
      var all = s.querySelectorAll("article.finding");
      var shown = s.querySelectorAll("article.finding:not([hidden])");
      s.hidden = all.length > 0 && shown.length === 0;
      var entry = document.querySelector('nav li[data-for="' + s.id + '"]');
      if (entry) entry.hidden = s.hidden;
    });
    drawAll();
  }
  boxes.forEach(function (b) { b.addEventListener("change", filter); });
  document.addEventListener("toggle", drawAll, true);
  window.addEventListener("resize", drawAll);
  drawAll();
  document.documentElement.setAttribute("data-ready", "1");
})();
