package tuningpage

import "html/template"

// style is both pages' style sheet, after the figures' @font-face.
const style = `
body{font-family:"Liberation Serif",Georgia,serif;max-width:780px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45;background:#fff}
h1{font-size:1.6em;margin-bottom:.2em}
h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.6em 0}
td,th{padding:.2em .8em;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
th{font-weight:normal;color:#555;white-space:nowrap}
figure{margin:1em 0}
figure svg{max-width:100%;height:auto;display:block}
figcaption{font-size:.9em;color:#555}
.lead{font-size:1.05em}
.hidden{background:#f4f6fa;border-left:4px solid #1f5fb4;padding:.5em .8em}
.notprivate{background:#fde8e8;border:2px solid #c81e1e;color:#7a0d0d;padding:.6em .9em;font-weight:bold}
code{font-size:.85em;word-break:break-all}
`

var releaseTemplate = template.Must(template.New("release").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>dptune tuning: {{.Report.Tuner}} on {{.Report.Dataset}}</title>
<style>{{.Font}}{{.Style}}</style>
</head>
<body>
<h1>Tuning: {{.Report.Tuner}} on {{.Report.Dataset}}</h1>
<p class="lead">{{.Lead}}</p>
<p class="hidden">{{.Hidden}}</p>
{{range .Notes}}<p>{{.}}</p>
{{end}}
<h2>The selected candidate</h2>
<p>Search space <b>{{.Space.Name}}</b>, {{.Candidates}} candidates.</p>
<table>
<tr><th>setting</th><th>selected</th>{{if .HasDef}}<th>published default</th>{{end}}<th></th></tr>
{{range .Settings}}<tr><td>{{.Name}}</td><td><b>{{.Selected}}</b></td>{{if $.HasDef}}<td>{{.Default}}</td>{{end}}<td>{{.Note}}</td></tr>
{{end}}</table>
{{range .Figures}}<figure>{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>
{{end}}
<h2>Its released score</h2>
{{if or .Score .Test}}<table>
{{if .Score}}<tr><td>validation score</td><td><b>{{.Score}}</b></td></tr>{{end}}
{{if .Test}}<tr><td>test accuracy of the released model</td><td><b>{{.Test}}</b></td></tr>{{end}}
</table>
{{with .Scores}}<figure>{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>{{end}}
{{else}}<p>report.json releases no score.</p>{{end}}
{{if not .Score}}<p>This tuner releases no validation score.</p>{{end}}
<h2>The privacy it spent</h2>
<p>In total <b>ε = {{.Epsilon}}</b>, δ = {{.Delta}} ({{.Report.Accountant}} accountant): the number to report, covering every run of the tuning, every score that influenced the choice, and the released model.{{if .Generic}} This ε is APPROXIMATE (not a proved bound); the proved ε of the same tuning is {{.Generic}}.{{end}}</p>
{{if .Comps}}<table>
<tr><th>component</th><th>ε alone</th><th></th></tr>
{{range .Comps}}<tr><td>{{.Name}}</td><td>{{.Epsilon}}</td><td>{{.Note}}</td></tr>
{{end}}</table>{{end}}
<figure>{{.Privacy.SVG}}<figcaption>{{.Privacy.Caption}}</figcaption></figure>
{{if .Labels}}<p>The ledger's entries:</p>
<ul>{{range .Labels}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{with .Report.Baseline}}<h2>The published default</h2>
<p>What a user does instead of tuning: one private run of {{.Network}}'s published settings at the same (ε, δ). Where they come from: {{.Source}}.</p>
<table>
<tr><td>network</td><td>{{.Network}}</td></tr>
<tr><td>learning_rate</td><td>{{.LearningRate}}</td></tr>
<tr><td>clip_norm</td><td>{{.ClipNorm}}</td></tr>
<tr><td>batch_size</td><td>{{.BatchSize}}</td></tr>
<tr><td>epochs</td><td>{{.Epochs}}</td></tr>
<tr><td>momentum</td><td>{{.Momentum}}</td></tr>
</table>
<p><code>{{.Command}}</code></p>
{{end}}{{with .Verdict}}<p>{{.}}</p>
{{end}}
</body>
</html>
`))

var curatorTemplate = template.Must(template.New("curator").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>NOT PRIVATE: dptune tuning diagnostics, {{.Report.Tuner}} on {{.Report.Dataset}} (for the data curator only)</title>
<style>{{.Font}}{{.Style}}</style>
</head>
<body>
<p class="notprivate">NOT PRIVATE. For the data curator only: this page shows the number of runs and every run's score, which the privacy guarantee of the release needs hidden. Never publish it, nor any figure or number from it.</p>
<h1>NOT PRIVATE: every run of the tuning</h1>
<p>{{.Report.Tuner}} on {{.Report.Dataset}}, search space <b>{{.Space.Name}}</b> ({{.Candidates}} candidates{{if .Report.IncludesDefault}}, and the default{{end}}). The release itself, and its page, are in <code>{{.ReleasePage}}</code>.</p>
<table>
<tr><td>runs</td><td><b>{{.Runs}}</b>{{if .Dist}} (drawn from {{.Dist}}){{end}}</td></tr>
<tr><td>distinct candidates run</td><td>{{.Distinct}}</td></tr>
<tr><td>failed runs</td><td>{{.Failed}}</td></tr>
{{if .Best}}<tr><td>best score</td><td>{{.Best}}</td></tr>{{end}}
</table>
{{range .Figures}}<figure>{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>
{{end}}
<h2>Every run</h2>
<table>
<tr><th>run</th>{{range .Dims}}<th>{{.}}</th>{{end}}<th>score</th><th></th></tr>
{{range .Rows}}<tr><td>{{.Run}}</td>{{range .Values}}<td>{{.}}</td>{{end}}<td>{{.Score}}</td><td>{{.Note}}</td></tr>
{{end}}</table>
<p class="notprivate">NOT PRIVATE: the number of runs and the scores above are the data curator's; the guarantee of the release holds only while they stay hidden.</p>
</body>
</html>
`))
