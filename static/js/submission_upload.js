// Upload form: the new-method fields apply only when no existing method is chosen.
(function () {
  "use strict";
  const existing = document.getElementById("id_method");
  if (!existing) return;
  const newFields = ["id_new_method", "id_method_kind"]
    .map((id) => document.getElementById(id))
    .filter(Boolean);
  function sync() {
    const chosen = existing.value !== "";
    newFields.forEach((field) => { field.disabled = chosen; });
  }
  existing.addEventListener("change", sync);
  sync();
})();
