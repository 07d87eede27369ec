// Keyboard grading on an answer's page: j/k next/previous, 1-9 apply (or remove) a rubric item
// and save, s save, n save and go to the next answer. Keys typed into a field are left alone.
document.addEventListener("keydown", function (event) {
  var target = event.target;
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  if (target && /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName)) return;
  var form = document.getElementById("grade");
  function go(id) {
    var link = document.getElementById(id);
    if (link) window.location.href = link.href;
  }
  if (event.key === "j") go("next");
  else if (event.key === "k") go("prev");
  else if (form && event.key === "s") form.requestSubmit(document.getElementById("save"));
  else if (form && event.key === "n") {
    var next = document.getElementById("save-next");
    form.requestSubmit(next || document.getElementById("save"));
  } else if (form && /^[1-9]$/.test(event.key)) {
    var box = form.querySelector('input[data-key="' + event.key + '"]');
    if (!box) return;
    box.checked = !box.checked;
    form.requestSubmit(document.getElementById("save"));
  } else return;
  event.preventDefault();
});
