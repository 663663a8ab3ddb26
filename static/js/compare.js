/* The comparison page's scatter: one entry's per-task speedups against another's (Chart.js), with the
   diagonal where both are equally fast. The table on the page holds the same numbers. */
(function () {
  "use strict";

  function readData() {
    var node = document.getElementById("compare-data");
    return node ? JSON.parse(node.textContent) : null;
  }

  function draw() {
    var data = readData();
    var canvas = document.getElementById("chart-compare");
    if (!data || !canvas || typeof Chart === "undefined" || !data.points.length) { return; }
    var values = data.points.map(function (p) { return p.x; }).concat(data.points.map(function (p) { return p.y; }));
    var low = Math.min.apply(null, values), high = Math.max.apply(null, values);
    new Chart(canvas, {
      type: "scatter",
      data: {
        datasets: [
          { label: "tasks", data: data.points, backgroundColor: "#2f5fb3", pointRadius: 4 },
          { label: "equal speed", type: "line", data: [{ x: low, y: low }, { x: high, y: high }],
            borderColor: "#adb5bd", borderDash: [4, 4], pointRadius: 0, fill: false }
        ]
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        plugins: {
          legend: { display: false },
          tooltip: {
            callbacks: {
              label: function (item) {
                var point = item.raw;
                return (point.task || "") + ": " + point.x.toFixed(3) + "× vs " + point.y.toFixed(3) + "×";
              }
            }
          }
        },
        scales: {
          x: { type: "logarithmic", title: { display: true, text: data.x_label + " (× vs eager)" } },
          y: { type: "logarithmic", title: { display: true, text: data.y_label + " (× vs eager)" } }
        }
      }
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", draw);
  } else {
    draw();
  }
})();
