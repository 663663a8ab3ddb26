// Live status of a submission: polls its JSON status and refreshes the progress bar and per-task table.
(function () {
  "use strict";
  const box = document.getElementById("submission-status");
  if (!box || box.dataset.final === "true") return;
  const badge = document.getElementById("status-badge");
  const bar = document.getElementById("progress");
  const text = document.getElementById("progress-text");
  const reason = document.getElementById("status-reason");
  const rows = document.getElementById("task-rows");
  let lastKey = "";

  async function refreshTable() {
    const response = await fetch(box.dataset.tableUrl, { credentials: "same-origin" });
    if (response.ok) rows.innerHTML = await response.text(); // server-rendered, escaped by the template
  }

  async function poll() {
    let state;
    try {
      const response = await fetch(box.dataset.statusUrl, { headers: { Accept: "application/json" } });
      state = await response.json();
    } catch (error) {
      setTimeout(poll, 5000);
      return;
    }
    badge.textContent = state.status;
    badge.className = "badge " + state.status;
    bar.max = Math.max(state.total, 1);
    bar.value = state.done;
    text.textContent = state.done + " of " + state.total + " tasks";
    reason.textContent = state.reason;
    const key = state.status + ":" + state.done;
    if (key !== lastKey) {
      lastKey = key;
      await refreshTable();
    }
    if (state.final) {
      window.location.reload(); // the finished page shows the environment and history
      return;
    }
    setTimeout(poll, 2000);
  }
  setTimeout(poll, 1000);
})();
