/* Leaderboard page enhancements: filters apply on change, the p slider, row picking and Chart.js charts.
   Everything here is optional: without JavaScript the same table, sorting and filters work through links
   and the form. */
(function () {
  "use strict";

  document.documentElement.classList.add("js");

  var COLORS = ["#2f5fb3", "#d9480f", "#2b8a3e", "#862e9c", "#c2255c", "#0b7285", "#e67700", "#495057",
    "#5f3dc4", "#a61e4d"];
  var VERIFIED = "#17804a";
  var REPORTED = "#2f5fb3";
  var charts = {};

  function readData() {
    var node = document.getElementById("chart-data");
    return node ? JSON.parse(node.textContent) : null;
  }

  function colorFor(index) {
    return COLORS[index % COLORS.length];
  }

  function showEmpty(canvas, message) {
    var box = canvas.parentNode;
    var note = box.querySelector(".chart-empty");
    if (!note) {
      note = document.createElement("div");
      note.className = "chart-empty";
      box.appendChild(note);
    }
    note.textContent = message;
    note.hidden = !message;
  }

  function makeChart(id, config, empty) {
    var canvas = document.getElementById(id);
    if (!canvas) { return null; }
    if (charts[id]) { charts[id].destroy(); }
    showEmpty(canvas, empty || "");
    config.options = Object.assign({ animation: false, maintainAspectRatio: false, responsive: true },
      config.options || {});
    charts[id] = new window.Chart(canvas, config);
    return charts[id];
  }

  /* fast_p against p for the picked rows */
  function selectedIds() {
    var boxes = document.querySelectorAll("#leaderboard input[name=compare]:checked");
    return Array.prototype.map.call(boxes, function (box) { return Number(box.value); });
  }

  function drawCurves(data, ids) {
    var picked = data.curves.filter(function (curve) { return ids.indexOf(curve.id) !== -1; });
    var datasets = picked.map(function (curve, index) {
      return {
        label: curve.label + (curve.verified ? " (verified)" : " (reported)"),
        data: curve.points.map(function (point) { return { x: point[0], y: point[1] }; }),
        borderColor: colorFor(index),
        backgroundColor: colorFor(index),
        borderDash: curve.verified ? [] : [5, 4],
        pointRadius: curve.verified ? 0 : 3,
        borderWidth: 2,
        tension: 0
      };
    });
    var empty = data.curves.length ? (datasets.length ? "" : "Tick rows in the table to draw them.")
      : "No fast_p data on this page.";
    makeChart("chart-fastp", {
      type: "line",
      data: { datasets: datasets },
      options: {
        parsing: false,
        scales: {
          x: { type: "linear", min: 0, max: 3, title: { display: true, text: "p (speedup threshold)" } },
          y: { min: 0, suggestedMax: 100, title: { display: true, text: "fast_p (%)" } }
        },
        plugins: { legend: { position: "bottom", labels: { boxWidth: 12, font: { size: 11 } } } }
      }
    }, empty);
  }

  function drawBars(data) {
    var bars = data.bars;
    makeChart("chart-bars", {
      type: "bar",
      data: {
        labels: bars.map(function (bar) { return bar.label; }),
        datasets: [{
          label: data.sort.title,
          data: bars.map(function (bar) { return bar.value; }),
          backgroundColor: bars.map(function (bar) { return bar.provenance === "verified" ? VERIFIED : REPORTED; }),
          maxBarThickness: 22
        }]
      },
      options: {
        indexAxis: "y",
        plugins: { legend: { display: false } },
        scales: { y: { ticks: { autoSkip: false, font: { size: 10.5 } } } }
      }
    }, bars.length ? "" : (data.numeric ? "No values to draw." : "Sort by a metric to chart it."));
  }

  function drawScatter(data) {
    var points = data.scatter;
    var logY = points.length > 1 && Math.max.apply(null, points.map(function (p) { return p.y; })) /
      Math.max(1e-9, Math.min.apply(null, points.map(function (p) { return p.y; }))) > 20;
    makeChart("chart-scatter", {
      type: "scatter",
      data: {
        datasets: [{
          label: "entries",
          data: points.map(function (p) { return { x: p.x, y: p.y, label: p.label }; }),
          backgroundColor: points.map(function (p) { return p.provenance === "verified" ? VERIFIED : REPORTED; }),
          pointRadius: 5
        }]
      },
      options: {
        scales: {
          x: { min: 0, max: 100, title: { display: true, text: "correct rate (%)" } },
          y: { type: logY ? "logarithmic" : "linear", title: { display: true, text: "geomean speedup (×)" } }
        },
        plugins: {
          legend: { display: false },
          tooltip: { callbacks: { label: function (item) {
            return item.raw.label + ": " + item.raw.x + "% correct, " + item.raw.y + "×";
          } } }
        }
      }
    }, points.length ? "" : "No row on this page has both a correct rate and a geomean.");
  }

  function drawTimeline(data) {
    var line = data.timeline;
    makeChart("chart-time", {
      type: "line",
      data: {
        labels: line.months,
        datasets: [
          { label: "best so far", data: line.best, stepped: true, borderColor: "#1b1f24", borderWidth: 2,
            pointRadius: 3, pointBackgroundColor: "#1b1f24" },
          { label: "entries", data: line.points, showLine: false, pointRadius: 4,
            backgroundColor: "rgba(47, 95, 179, 0.55)", borderColor: "rgba(47, 95, 179, 0.9)" }
        ]
      },
      options: {
        plugins: {
          legend: { position: "bottom", labels: { boxWidth: 12, font: { size: 11 } } },
          tooltip: { callbacks: { label: function (item) { return item.raw.label + ": " + item.raw.y; } } }
        },
        scales: { y: { title: { display: true, text: data.sort.title } } }
      }
    }, line.points.length ? "" : (data.numeric ? "No dated values to draw." : "Sort by a metric to chart it."));
  }

  function rememberSelection(ids) {
    var url = new URL(window.location.href);
    url.searchParams.delete("compare");
    ids.forEach(function (id) { url.searchParams.append("compare", String(id)); });
    window.history.replaceState(null, "", url.toString());
  }

  function setUpCharts() {
    var data = readData();
    if (!data || typeof window.Chart === "undefined") { return; }
    window.Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
    window.Chart.defaults.font.size = 11.5;
    drawCurves(data, data.selected);
    drawBars(data);
    drawScatter(data);
    drawTimeline(data);
    var table = document.getElementById("leaderboard");
    if (table) {
      table.addEventListener("change", function (event) {
        if (event.target.name !== "compare") { return; }
        var ids = selectedIds();
        drawCurves(data, ids);
        rememberSelection(ids);
      });
    }
    window.leaderboardCharts = charts;
  }

  /* Filters apply as soon as they change; the p slider shows its value while it moves. */
  function setUpFilters() {
    var form = document.getElementById("filters");
    if (!form) { return; }
    var range = document.getElementById("p-range");
    var output = document.getElementById("p-value");
    if (range && output) {
      range.addEventListener("input", function () { output.textContent = Number(range.value).toFixed(2); });
    }
    form.addEventListener("change", function (event) {
      if (event.target.name === "q") { return; }
      form.requestSubmit ? form.requestSubmit() : form.submit();
    });
    form.addEventListener("submit", function () {
      Array.prototype.forEach.call(form.elements, function (field) {
        if (field.name && field.value === "" && field.tagName !== "BUTTON") { field.disabled = true; }
      });
    });
  }

  /* On a phone the filters fold behind their summary, so the table's scores are on the first screen. */
  function foldFiltersOnPhones() {
    var box = document.getElementById("filters-box");
    if (box && window.matchMedia("(max-width: 720px)").matches) { box.open = false; }
  }

  /* A value's popover: its provenance and conventions in words, with the source, run and entry linked.
     The first click on a value opens it; the links inside lead on. */
  var popover = null;

  function closePopover() {
    if (popover) { popover.remove(); popover = null; }
  }

  function addLink(parent, href, text, external) {
    var link = document.createElement("a");
    link.href = href;
    link.textContent = text;
    if (external) { link.target = "_blank"; link.rel = "noopener"; }
    parent.appendChild(link);
  }

  function openPopover(cell, valueLink) {
    closePopover();
    popover = document.createElement("div");
    popover.className = "cell-pop";
    popover.setAttribute("role", "dialog");
    popover.setAttribute("data-testid", "cell-popover");
    (cell.getAttribute("title") || "").split("\n").forEach(function (line) {
      var paragraph = document.createElement("p");
      paragraph.textContent = line;
      popover.appendChild(paragraph);
    });
    var links = document.createElement("div");
    links.className = "pop-links";
    var verified = cell.classList.contains("is-verified");
    if (valueLink && verified) { addLink(links, valueLink.getAttribute("href"), "Evaluation run", false); }
    var source = cell.getAttribute("data-source") || (!verified && valueLink ? valueLink.getAttribute("href") : "");
    if (source) { addLink(links, source, "Source ↗", true); }
    var entry = cell.parentNode.querySelector(".entry-link");
    if (entry) { addLink(links, entry.getAttribute("href"), "Entry page: how it was measured", false); }
    popover.appendChild(links);
    var close = document.createElement("button");
    close.type = "button";
    close.textContent = "×";
    close.setAttribute("aria-label", "Close");
    close.addEventListener("click", closePopover);
    popover.appendChild(close);
    document.body.appendChild(popover);
    var box = cell.getBoundingClientRect();
    var left = Math.min(window.scrollX + box.left, window.scrollX + document.documentElement.clientWidth - popover.offsetWidth - 8);
    popover.style.left = Math.max(window.scrollX + 4, left) + "px";
    popover.style.top = (window.scrollY + box.bottom + 4) + "px";
  }

  function setUpPopovers() {
    var table = document.getElementById("leaderboard");
    if (!table) { return; }
    table.addEventListener("click", function (event) {
      var cell = event.target.closest("td.num[title]");
      if (!cell) { return; }
      var valueLink = cell.querySelector("a.v");
      if (event.target.closest("a.v") && !event.ctrlKey && !event.metaKey) { event.preventDefault(); }
      openPopover(cell, valueLink);
      event.stopPropagation();
    });
    document.addEventListener("click", function (event) {
      if (popover && !popover.contains(event.target)) { closePopover(); }
    });
    document.addEventListener("keydown", function (event) { if (event.key === "Escape") { closePopover(); } });
  }

  document.addEventListener("DOMContentLoaded", function () {
    foldFiltersOnPhones();
    setUpFilters();
    setUpCharts();
    setUpPopovers();
  });
})();
