// Hovering a step in the DAG lights up its edges and dims the others, so
// one step's parents and children can be followed through a big graph.
(function () {
  const svg = document.getElementById("dag");
  if (!svg) return;
  const edges = [...svg.querySelectorAll("path.edge")];
  svg.querySelectorAll("g.node").forEach((g) => {
    const step = g.dataset.step;
    g.addEventListener("mouseenter", () => {
      svg.classList.add("dim");
      edges.forEach((e) => e.classList.toggle("lit", e.dataset.from === step || e.dataset.to === step));
    });
    g.addEventListener("mouseleave", () => {
      svg.classList.remove("dim");
      edges.forEach((e) => e.classList.remove("lit"));
    });
  });
})();
